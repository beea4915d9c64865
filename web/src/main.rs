//! Entry point of the browser app (built by Trunk for wasm32). On the host this binary does
//! nothing: the app only runs in a browser.

fn main() {
    #[cfg(target_arch = "wasm32")]
    bitlens_web::start();
}
