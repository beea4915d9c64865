//! Files of other formats than safetensors (GGUF, PyTorch, NumPy) described by a worker
//! ([`Layouts`]: `WorkerRequest::Describe`, synchronous reads of only the bytes that describe the
//! tensors), one file at a time; a remote file's answer carries its fingerprint (size and header
//! hash, `bitlens_report::sidecar`), taken from the bytes read for the layout.

use super::Source;
use crate::ui::io::blob::js_error_text;
use crate::ui::jobs::to_ref;
use crate::ui::worker::WorkerHandle;
use bitlens_protocol::js::Event;
use bitlens_protocol::{JobResult, WorkerEvent, WorkerRequest};
use bitlens_report::sidecar::Fingerprint;
use bitlens_tensors::format::Layout;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use yew::Callback;

/// What a worker read of a file.
pub struct Described {
    /// Its layout.
    pub layout: Layout,
    /// A remote file's fingerprint (`None` for a local one, or when it could not be taken).
    pub fingerprint: Option<Fingerprint>,
}

/// The answer a [`Describer`] waits for, and how to wake it.
#[derive(Default)]
struct Reply {
    event: Option<Event>,
    wake: Option<js_sys::Function>,
}

/// A worker that reads the layouts of files of other formats than safetensors, one at a time.
struct Describer {
    worker: WorkerHandle,
    reply: Rc<RefCell<Reply>>,
}

impl Describer {
    fn start() -> Result<Describer, String> {
        let reply = Rc::new(RefCell::new(Reply::default()));
        let to = reply.clone();
        let events = Callback::from(move |e: Event| {
            // A request ends with `Done` or `Failed` (a crash too); nothing else is awaited.
            if matches!(e, WorkerEvent::Done { .. } | WorkerEvent::Failed { .. }) {
                let wake = {
                    let mut r = to.borrow_mut();
                    r.event = Some(e);
                    r.wake.take()
                };
                if let Some(w) = wake {
                    let _ = w.call0(&JsValue::NULL);
                }
            }
        });
        let worker = WorkerHandle::spawn("worker.js", "worker", events)?;
        Ok(Describer { worker, reply })
    }

    /// The layout of `file`, read in the worker (with a remote file's fingerprint).
    async fn layout(&self, file: &Source) -> Result<Described, String> {
        let mut wake = None;
        let answered = js_sys::Promise::new(&mut |resolve, _| wake = Some(resolve));
        *self.reply.borrow_mut() = Reply { event: None, wake };
        self.worker.post(&WorkerRequest::Describe {
            task: 0,
            file: to_ref(file),
        })?;
        JsFuture::from(answered)
            .await
            .map_err(|e| js_error_text(&e))?;
        let event = self.reply.borrow_mut().event.take();
        match event {
            Some(WorkerEvent::Done {
                result: JobResult::Layout(layout, fingerprint),
                ..
            }) => Ok(Described {
                layout: *layout,
                fingerprint: fingerprint.map(|f| *f),
            }),
            Some(WorkerEvent::Failed { message, .. }) => Err(message),
            _ => Err("the worker answered without a layout".into()),
        }
    }
}

/// Layouts of the files of one load, by one worker started at the first one.
#[derive(Default)]
pub struct Layouts(Option<Describer>);

impl Layouts {
    /// The layout of `file` (and a remote file's fingerprint), read by the worker.
    pub async fn read(&mut self, file: &Source) -> Result<Described, String> {
        if self.0.is_none() {
            self.0 = Some(Describer::start()?);
        }
        match &self.0 {
            Some(d) => d.layout(file).await,
            None => Err("no worker to read the file".into()),
        }
    }
}
