//! What an error line about a URL offers: reading a small file whole when its server ignores
//! `Range` ([`App::download_whole`]), and trying a URL that could not be opened again
//! ([`App::retry`]: a dropped connection or an unreachable server after the retries, a CORS
//! setting fixed since, a file put in place).

use super::{App, Msg};
use crate::model::link::file_name;
use crate::ui::io::files::Picked;
use crate::ui::io::remote;
use crate::ui::jobs::now;
use yew::prelude::*;

impl App {
    /// Forgets the errors and the offer about `url` (a new attempt reports its own).
    fn forget_errors(&mut self, url: &str) {
        let s = &mut self.state;
        let told_before = s.errors[..self.errors_told.min(s.errors.len())]
            .iter()
            .filter(|e| e.file != url)
            .count();
        s.errors.retain(|e| e.file != url);
        s.offers.retain(|u| u != url);
        self.errors_told = told_before;
    }

    /// Reads the small file at `url` whole (its server ignores `Range`; the visitor asked).
    pub(super) fn download_whole(&mut self, ctx: &Context<Self>, url: String) {
        self.forget_errors(&url);
        self.state.other_urls.retain(|u| *u != url);
        self.state.loading = true;
        let given = now();
        let credentials = ctx.props().credentials;
        ctx.link().send_future(async move {
            match remote::download(&url, credentials).await {
                Ok(blob) => Msg::Given(
                    vec![Picked {
                        path: file_name(&url),
                        blob,
                    }],
                    given,
                ),
                Err(e) => Msg::Failed(e),
            }
        });
    }

    /// Opens `url` again (its sidecar as given at start, else next to it).
    pub(super) fn retry(&mut self, ctx: &Context<Self>, url: String) {
        self.forget_errors(&url);
        let props = ctx.props();
        let stats = props
            .urls
            .as_ref()
            .and_then(|urls| urls.iter().position(|u| u.trim() == url))
            .and_then(|i| self.state.stats.get(i).cloned())
            .into_iter()
            .collect();
        self.open_urls(ctx, vec![url], stats);
    }

    /// The URLs whose error line offers Retry: those asked for that gave no checkpoint.
    pub(super) fn retryable(&self) -> &[String] {
        &self.state.other_urls
    }
}
