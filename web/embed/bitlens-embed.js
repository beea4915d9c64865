// @ts-check
// <bitlens-view>: the bitlens app as a drop-in element (docs/EMBED.md).
//
//   <script type="module" src="https://cdn.example/bitlens/bitlens-embed.js"></script>
//   <bitlens-view src="https://hub.example/model.safetensors" tensor="NAME" view="table"></bitlens-view>
//
// Everything it needs sits next to this file and is found relative to its own URL
// (`import.meta.url`), whatever the page's origin: the app's module (`bitlens-web.js` + wasm,
// loaded once per page), the workers (`worker.js`, started through a same-origin shim when this
// file comes from another origin, see web/src/ui/assets.rs) and `style.css`. Each element renders
// one app (web/src/embed.rs `mountView`) in an open shadow root, so the page's CSS neither leaks in
// nor out; its attributes are live. Several elements share one pool of statistics workers.

/**
 * A mounted view (web/src/embed.rs `ViewHandle`).
 * @typedef {object} ViewHandle
 * @property {(options: string) => void} set
 * @property {() => string} inspect
 * @property {() => void} unmount
 */

/**
 * The exports of the app's module that the element uses.
 * @typedef {object} AppModule
 * @property {(options: {module_or_path: URL}) => Promise<unknown>} default
 * @property {(url: string) => void} setAssetBase
 * @property {() => number} poolWorkers
 * @property {(root: Element, options: string, onEvent: (type: string, detail: unknown) => void) => ViewHandle} mountView
 */

/**
 * The options a view is mounted with (web/src/embed.rs `Options`).
 * @typedef {object} ViewOptions
 * @property {string[]} urls
 * @property {string[]} stats
 * @property {string | null} tensor
 * @property {string | null} view
 * @property {number | null} autoStats
 * @property {boolean} credentials
 * @property {'light' | 'dark' | 'auto'} theme
 */

/** The directory of this script: the embed's files. */
const BASE = new URL('./', import.meta.url);

/**
 * The element's own rules, before the app's stylesheet. The page's rules match the element itself
 * (a page's `* { font-size: 31px !important }` too) but nothing inside its shadow root; what would
 * reach inside is what the element inherits. So the root node inside resets every property at once
 * (`all: initial`; `direction` and `unicode-bidi`, which `all` leaves, by name), and the app's
 * stylesheet then sets the font, size, colours and line height there (web/style.css,
 * `.bitlens-root`), from the documented custom properties (`--bitlens-font`, … : custom properties
 * are not reset by `all`, so a host page sets them on the element on purpose) or their defaults.
 */
const HOST_STYLE = `
:host { display: block; box-sizing: border-box; overflow: auto; contain: content; }
:host([hidden]) { display: none; }
.bitlens-root {
  all: initial; direction: ltr; unicode-bidi: isolate;
  display: block; box-sizing: border-box; height: 100%;
}
`;

/** The themes an element takes (`theme` attribute); anything else is `auto`. */
const THEMES = ['light', 'dark', 'auto'];

/** @type {Promise<AppModule> | null} */
let appModule = null;

/** The app's module, loaded and instantiated once per page. */
function loadApp() {
  if (appModule === null) {
    appModule = (async () => {
      // Tells the module's `main` not to mount the full app on the page's <body>.
      /** @type {Record<string, unknown>} */ (globalThis).__bitlensEmbed = true;
      const m = /** @type {AppModule} */ (await import(new URL('bitlens-web.js', BASE).href));
      await m.default({ module_or_path: new URL('bitlens-web_bg.wasm', BASE) });
      m.setAssetBase(BASE.href);
      return m;
    })();
  }
  return appModule;
}

/** @param {unknown} e */
const errorText = (e) => (e instanceof Error ? e.message : String(e));

/** The `<bitlens-view>` element. */
export class BitlensView extends HTMLElement {
  static observedAttributes = ['src', 'stats', 'tensor', 'view', 'auto-stats', 'credentials', 'theme'];

  /** @type {ViewHandle | null} */
  #handle = null;
  /** @type {Promise<ViewHandle | null> | null} resolves once mounted (null: could not load) */
  #mounting = null;
  /** @type {HTMLDivElement} */
  #root;

  constructor() {
    super();
    const shadow = this.attachShadow({ mode: 'open' });
    const style = document.createElement('style');
    style.textContent = HOST_STYLE;
    const sheet = document.createElement('link');
    sheet.rel = 'stylesheet';
    sheet.href = new URL('style.css', BASE).href;
    this.#root = document.createElement('div');
    this.#root.className = 'bitlens-root';
    shadow.append(style, sheet, this.#root);
  }

  /** What the attributes say. @returns {ViewOptions} */
  options() {
    const auto = this.getAttribute('auto-stats');
    const n = auto === null ? NaN : Number(auto);
    /** @param {string} name */
    const list = (name) => (this.getAttribute(name) ?? '').split(/\s+/).filter((u) => u !== '');
    const theme = (this.getAttribute('theme') ?? '').trim().toLowerCase();
    return {
      urls: list('src'),
      stats: list('stats'),
      tensor: this.getAttribute('tensor'),
      view: this.getAttribute('view'),
      autoStats: Number.isFinite(n) && n >= 0 ? Math.floor(n) : null,
      credentials: this.hasAttribute('credentials'),
      theme: /** @type {'light' | 'dark' | 'auto'} */ (THEMES.includes(theme) ? theme : 'auto'),
    };
  }

  connectedCallback() {
    if (this.#mounting !== null) return;
    /** @type {Promise<ViewHandle | null>} */
    const mounting = loadApp().then(
      (m) => {
        if (this.#mounting !== mounting) return null; // removed (and maybe added again) meanwhile
        this.#handle = m.mountView(this.#root, JSON.stringify(this.options()), (type, detail) =>
          this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true })),
        );
        return this.#handle;
      },
      (e) => {
        this.#fail(`cannot load the bitlens module from ${BASE.href}: ${errorText(e)}`);
        return null;
      },
    );
    this.#mounting = mounting;
  }

  disconnectedCallback() {
    const handle = this.#handle;
    this.#handle = null;
    this.#mounting = null;
    handle?.unmount();
  }

  attributeChangedCallback() {
    if (this.#handle === null) return; // mounting reads the attributes itself
    try {
      this.#handle.set(JSON.stringify(this.options()));
    } catch (e) {
      this.#fail(errorText(e));
    }
  }

  /**
   * The `bitlens inspect --json` document of what the view has loaded (`files[].tensors[]`), with
   * the statistics of every tensor computed so far.
   * @returns {Promise<unknown>}
   */
  async inspect() {
    const handle = await (this.#mounting ?? Promise.resolve(null));
    if (handle === null) throw new Error('bitlens-view: not mounted (not in the document, or its module failed to load)');
    return JSON.parse(handle.inspect());
  }

  /** Number of statistics workers running on the page (one pool for every view). */
  static async workers() {
    return (await loadApp()).poolWorkers();
  }

  /** @param {string} message */
  #fail(message) {
    this.dispatchEvent(
      new CustomEvent('bitlens-error', { detail: { url: null, message }, bubbles: true, composed: true }),
    );
  }
}

if (!customElements.get('bitlens-view')) customElements.define('bitlens-view', BitlensView);
