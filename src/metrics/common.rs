//! What the seed counters and the SLI metrics share: registration from the definitions
//! table, stable object ids, label hygiene, the default series TTL, the stamps a scan
//! of the NodeClaims is kept by, and the few events a scan reads picked out of all. Both depend on
//! this, never on each other's internals.

use prometheus_client::registry::Registry;

use super::defs::MetricDef;
use crate::model::stamps::Stamps;
use crate::model::Meta;

/// The stamps a scan of the NodeClaims reads (with their nodes and pools), and with
/// `events` Karpenter's events too: what a scan kept between passes is kept by.
pub fn claims_token(st: &Stamps, events: bool) -> [u64; 4] {
    [
        st.epoch(),
        st.zones(),
        st.pools(),
        if events { st.events_any() } else { 0 },
    ]
}

/// Some of the model's events, picked out of all of them once and kept while no event (and
/// nothing global) changed: a scan that reads a few kinds of event does not read every
/// event each pass.
#[derive(Debug, Default)]
pub struct PickedEvents {
    /// The model (its epoch), anything global and any event, at the last pick.
    token: Option<[u64; 3]>,
    events: Vec<std::sync::Arc<crate::model::Event>>,
}

impl PickedEvents {
    /// The events `pick` keeps, picked again only when the events changed. Each holder
    /// passes the same test at every call.
    pub fn of(
        &mut self,
        c: &crate::model::Cluster,
        pick: impl Fn(&crate::model::Event) -> bool,
    ) -> &[std::sync::Arc<crate::model::Event>] {
        let st = c.stamps();
        let token = [st.epoch(), st.global(), st.events_any()];
        if self.token != Some(token) {
            self.events = c.events.values().filter(|e| pick(e)).cloned().collect();
            self.token = Some(token);
        }
        &self.events
    }
}

/// The default `--series-ttl`.
pub const DEFAULT_SERIES_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

/// Register `m` under its definition's name and help.
pub(super) fn reg<M: prometheus_client::registry::Metric>(r: &mut Registry, d: &MetricDef, m: M) {
    // prometheus-client ends the help with a period itself.
    r.register(d.registered_name(), d.help.trim_end_matches('.'), m);
}

/// A stable id for an object: its UID, or kind/namespace/name when a dump has none.
pub fn uid(kind: &str, m: &Meta) -> String {
    uid_ref(kind, m).into_owned()
}

/// As [`uid`], borrowing the object's UID when it has one.
pub fn uid_ref<'m>(kind: &str, m: &'m Meta) -> std::borrow::Cow<'m, str> {
    if m.uid.is_empty() {
        std::borrow::Cow::Owned(format!(
            "{kind}/{}/{}",
            m.namespace.as_deref().unwrap_or_default(),
            m.name
        ))
    } else {
        std::borrow::Cow::Borrowed(&m.uid)
    }
}

/// A label value kelp may export: short, of safe characters; anything else is `other`, so
/// free text from the cluster never makes unbounded label values.
pub fn label_value(s: &str) -> String {
    let s = s.trim();
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        s.to_string()
    } else {
        "other".into()
    }
}
