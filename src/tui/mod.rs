//! `kelp top`: a live terminal view (ratatui on crossterm) of pools, nodes and pending
//! pods, on the same model, analysis and view model as the dashboard. This module owns
//! the view's state and keys ([`App`]), the terminal (raw mode and the alternate screen,
//! restored on exit, on error and on panic) and the event loop; [`model`] builds the
//! rows and [`render`] draws them. Everything from the cluster is drawn through
//! [`crate::explain::text::clean`], so no control character reaches the terminal.

pub mod model;
pub mod render;

use std::sync::mpsc;
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::widgets::TableState;

use crate::explain as why;
use crate::explain::text::{clean, Style};
pub use model::Snapshot;

/// The tables, in the order Tab visits them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Pools,
    Nodes,
    Pending,
}

impl Pane {
    fn next(self) -> Self {
        match self {
            Pane::Pools => Pane::Nodes,
            Pane::Nodes => Pane::Pending,
            Pane::Pending => Pane::Pools,
        }
    }
}

/// What `s` cycles through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// Pools in Karpenter's order (weight, then name); nodes by pool, drifted and
    /// blocked first; pending pods oldest first.
    Default,
    Name,
    Cost,
    Cpu,
    Memory,
    Age,
}

impl Sort {
    pub fn next(self) -> Self {
        match self {
            Sort::Default => Sort::Name,
            Sort::Name => Sort::Cost,
            Sort::Cost => Sort::Cpu,
            Sort::Cpu => Sort::Memory,
            Sort::Memory => Sort::Age,
            Sort::Age => Sort::Default,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Sort::Default => "karpenter",
            Sort::Name => "name",
            Sort::Cost => "$/hr",
            Sort::Cpu => "cpu",
            Sort::Memory => "memory",
            Sort::Age => "age",
        }
    }
}

/// The `why` answer open over the tables.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    /// Escaped lines, ready to draw.
    pub lines: Vec<String>,
    pub scroll: u16,
}

/// The view's state: the data, and what the user has done to it.
pub struct App {
    pub snap: Snapshot,
    pub pane: Pane,
    pub sort: Sort,
    pub filter: String,
    /// Typing into the filter (after `/`).
    pub editing: bool,
    pub panel: Option<Panel>,
    pub pools: TableState,
    pub nodes: TableState,
    pub pending: TableState,
    /// The last refresh error, shown in the header until a refresh works.
    pub error: Option<String>,
    /// Live (refreshing) or a dump.
    pub live: bool,
}

impl App {
    pub fn new(snap: Snapshot, live: bool) -> Self {
        let mut app = App {
            snap,
            pane: Pane::Nodes,
            sort: Sort::Default,
            filter: String::new(),
            editing: false,
            panel: None,
            pools: TableState::default(),
            nodes: TableState::default(),
            pending: TableState::default(),
            error: None,
            live,
        };
        app.clamp();
        app
    }

    /// Replace the data (a refresh), keeping the selection where it can.
    pub fn replace(&mut self, snap: Snapshot) {
        self.snap = snap;
        self.error = None;
        self.clamp();
    }

    fn matches(&self, hay: &[&str]) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        let needle = self.filter.to_lowercase();
        hay.iter().any(|h| h.to_lowercase().contains(&needle))
    }

    /// The pools shown, filtered and sorted.
    pub fn pools(&self) -> Vec<&model::PoolLine> {
        let mut v: Vec<&model::PoolLine> = self
            .snap
            .top
            .pools
            .iter()
            .filter(|p| self.matches(&[&p.name]))
            .collect();
        match self.sort {
            Sort::Default | Sort::Age => {
                v.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.name.cmp(&b.name)))
            }
            Sort::Name => v.sort_by(|a, b| a.name.cmp(&b.name)),
            Sort::Cost => biggest_first(&mut v, |p| p.cost_per_hour),
            Sort::Cpu => biggest_first(&mut v, |p| p.cpu.ratio()),
            Sort::Memory => biggest_first(&mut v, |p| p.memory.ratio()),
        }
        v
    }

    /// The nodes shown, filtered and sorted.
    pub fn nodes(&self) -> Vec<&model::NodeLine> {
        let mut v: Vec<&model::NodeLine> = self
            .snap
            .top
            .nodes
            .iter()
            .filter(|n| {
                self.matches(&[
                    &n.name,
                    &n.nodeclaim,
                    &n.pool,
                    &n.instance_type,
                    &n.capacity_type,
                    &n.zone,
                ])
            })
            .collect();
        match self.sort {
            Sort::Default => {}
            Sort::Name => v.sort_by(|a, b| a.name.cmp(&b.name)),
            Sort::Cost => biggest_first(&mut v, |n| n.price),
            Sort::Cpu => biggest_first(&mut v, |n| n.cpu.ratio()),
            Sort::Memory => biggest_first(&mut v, |n| n.memory.ratio()),
            // Oldest first; claims with no creation time last.
            Sort::Age => v.sort_by(|a, b| {
                a.created
                    .is_none()
                    .cmp(&b.created.is_none())
                    .then(a.created.cmp(&b.created))
            }),
        }
        v
    }

    /// The pending pods shown, filtered (and by name with the name sort).
    pub fn pending(&self) -> Vec<&model::PendingLine> {
        let mut v: Vec<&model::PendingLine> = self
            .snap
            .top
            .pending
            .iter()
            .filter(|p| self.matches(&[&p.namespace, &p.name, &p.verdict]))
            .collect();
        if self.sort == Sort::Name {
            v.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        }
        v
    }

    fn state(&mut self, pane: Pane) -> &mut TableState {
        match pane {
            Pane::Pools => &mut self.pools,
            Pane::Nodes => &mut self.nodes,
            Pane::Pending => &mut self.pending,
        }
    }

    fn len(&self, pane: Pane) -> usize {
        match pane {
            Pane::Pools => self.pools().len(),
            Pane::Nodes => self.nodes().len(),
            Pane::Pending => self.pending().len(),
        }
    }

    /// Keep every selection inside its (filtered) table.
    fn clamp(&mut self) {
        for pane in [Pane::Pools, Pane::Nodes, Pane::Pending] {
            let len = self.len(pane);
            let st = self.state(pane);
            match (len, st.selected()) {
                (0, _) => st.select(None),
                (_, None) => st.select(Some(0)),
                (n, Some(i)) if i >= n => st.select(Some(n - 1)),
                _ => {}
            }
        }
    }

    fn step(&mut self, delta: isize) {
        if let Some(p) = &mut self.panel {
            p.scroll = if delta < 0 {
                p.scroll.saturating_sub(delta.unsigned_abs() as u16)
            } else {
                p.scroll.saturating_add(delta as u16)
            };
            return;
        }
        let pane = self.pane;
        let len = self.len(pane);
        if len == 0 {
            return;
        }
        let st = self.state(pane);
        let i = st.selected().unwrap_or(0) as isize + delta;
        st.select(Some(i.clamp(0, len as isize - 1) as usize));
    }

    /// The `why` answer for the selected row; a pool narrows the node list to itself.
    fn open(&mut self) {
        let (c, pass) = (&self.snap.cluster, &self.snap.pass);
        let (title, text) = match self.pane {
            Pane::Pools => {
                let Some(name) = self
                    .pools
                    .selected()
                    .and_then(|i| self.pools().get(i).map(|p| p.name.clone()))
                else {
                    return;
                };
                self.filter = name;
                self.pane = Pane::Nodes;
                self.nodes.select(Some(0));
                self.clamp();
                return;
            }
            Pane::Nodes => {
                let Some(name) = self
                    .nodes
                    .selected()
                    .and_then(|i| self.nodes().get(i).map(|n| n.name.clone()))
                else {
                    return;
                };
                let text = why::node_answer(c, pass, &name)
                    .map(|a| why::node_text(c, pass.now, &a, Style::plain()));
                (format!("why node {name}"), text)
            }
            Pane::Pending => {
                let Some((ns, name)) = self.pending.selected().and_then(|i| {
                    self.pending()
                        .get(i)
                        .map(|p| (p.namespace.clone(), p.name.clone()))
                }) else {
                    return;
                };
                let text = why::pod_answer(c, pass, &ns, &name)
                    .map(|a| why::pod_text(c, pass.now, &a, Style::plain()));
                (format!("why pod {ns}/{name}"), text)
            }
        };
        let text = text.unwrap_or_else(|e| format!("error: {e}"));
        self.panel = Some(Panel {
            title: clean(&title).into_owned(),
            lines: text.lines().map(|l| clean(l).into_owned()).collect(),
            scroll: 0,
        });
    }

    /// Handle one key; true to quit.
    pub fn on_key(&mut self, key: KeyEvent) -> bool {
        if key.kind == KeyEventKind::Release {
            return false;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return true;
        }
        if self.editing {
            match key.code {
                KeyCode::Enter => self.editing = false,
                KeyCode::Esc => {
                    self.editing = false;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                // Printable characters only, and a bounded filter.
                KeyCode::Char(c) if !c.is_control() && self.filter.chars().count() < 200 => {
                    self.filter.push(c)
                }
                _ => {}
            }
            self.clamp();
            return false;
        }
        match key.code {
            KeyCode::Char('q') => return true,
            KeyCode::Esc if self.panel.is_some() => self.panel = None,
            KeyCode::Esc => self.filter.clear(),
            KeyCode::Char('/') => {
                self.panel = None;
                self.editing = true;
            }
            KeyCode::Char('s') => self.sort = self.sort.next(),
            KeyCode::Tab => self.pane = self.pane.next(),
            KeyCode::BackTab => self.pane = self.pane.next().next(),
            KeyCode::Down | KeyCode::Char('j') => self.step(1),
            KeyCode::Up | KeyCode::Char('k') => self.step(-1),
            KeyCode::PageDown => self.step(10),
            KeyCode::PageUp => self.step(-10),
            KeyCode::Home | KeyCode::Char('g') => self.step(-(u16::MAX as isize)),
            KeyCode::End | KeyCode::Char('G') => self.step(u16::MAX as isize),
            KeyCode::Enter if self.panel.is_none() => self.open(),
            _ => {}
        }
        self.clamp();
        false
    }
}

/// Puts the terminal back (raw mode off, main screen, cursor shown) when dropped: on a
/// normal exit and on an error; ratatui's panic hook does it on a panic.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// A fresh snapshot, or why there is none (one line).
pub type Refresh = Result<Snapshot, String>;

/// Run the view until `q`: draw, read keys, and take each refresh `updates` brings.
pub fn run(snap: Snapshot, updates: Option<mpsc::Receiver<Refresh>>) -> anyhow::Result<()> {
    let live = updates.is_some();
    let mut app = App::new(snap, live);
    let _restore = Restore;
    let mut terminal = ratatui::try_init()?;
    loop {
        terminal.draw(|f| render::draw(f, &mut app))?;
        if let Some(rx) = &updates {
            let mut got = false;
            while let Ok(r) = rx.try_recv() {
                match r {
                    Ok(s) => app.replace(s),
                    Err(e) => app.error = Some(clean(&e).into_owned()),
                }
                got = true;
            }
            if got {
                // Anything another thread wrote to the terminal (a warning) is painted over.
                terminal.clear()?;
                continue;
            }
        }
        if event::poll(Duration::from_millis(250))? {
            match event::read()? {
                Event::Key(k) if app.on_key(k) => break,
                _ => {}
            }
        }
    }
    Ok(())
}

/// Sort rows by a number, largest first; rows without one (None) last. Stable, so ties
/// keep the order they came in.
fn biggest_first<T>(rows: &mut [&T], key: impl Fn(&T) -> Option<f64>) {
    rows.sort_by(|a, b| {
        let (a, b) = (key(a).unwrap_or(-1.0), key(b).unwrap_or(-1.0));
        b.partial_cmp(&a).unwrap_or(std::cmp::Ordering::Equal)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> App {
        App::new(
            Snapshot::new(crate::demo::cluster().unwrap(), "demo", crate::demo::now()),
            false,
        )
    }

    fn key(app: &mut App, code: KeyCode) -> bool {
        app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn typed(app: &mut App, s: &str) {
        for c in s.chars() {
            key(app, KeyCode::Char(c));
        }
    }

    #[test]
    fn the_filter_narrows_every_table_and_esc_clears_it() {
        let mut a = app();
        let all = a.nodes().len();
        key(&mut a, KeyCode::Char('/'));
        assert!(a.editing);
        typed(&mut a, "GPU");
        key(&mut a, KeyCode::Enter);
        assert!(!a.editing);
        assert_eq!(a.filter, "GPU");
        let nodes = a.nodes();
        assert!(!nodes.is_empty() && nodes.len() < all);
        assert!(nodes
            .iter()
            .all(|n| [&n.pool, &n.name, &n.nodeclaim, &n.instance_type]
                .iter()
                .any(|f| f.to_lowercase().contains("gpu"))));
        assert_eq!(
            a.pools()
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>(),
            ["gpu"]
        );
        // `q` while typing is text, not quit.
        key(&mut a, KeyCode::Char('/'));
        assert!(!key(&mut a, KeyCode::Char('q')));
        assert_eq!(a.filter, "GPUq");
        key(&mut a, KeyCode::Esc);
        assert!(a.filter.is_empty());
        assert_eq!(a.nodes().len(), all);
    }

    #[test]
    fn sort_cycles_and_orders_nodes_by_price() {
        let mut a = app();
        key(&mut a, KeyCode::Char('s'));
        assert_eq!(a.sort, Sort::Name);
        let names: Vec<String> = a.nodes().iter().map(|n| n.name.clone()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        key(&mut a, KeyCode::Char('s'));
        assert_eq!(a.sort, Sort::Cost);
        let prices: Vec<f64> = a.nodes().iter().map(|n| n.price.unwrap_or(-1.0)).collect();
        assert!(prices.windows(2).all(|w| w[0] >= w[1]), "{prices:?}");
        for _ in 0..5 {
            key(&mut a, KeyCode::Char('s'));
        }
        assert_eq!(a.sort, Sort::Name);
    }

    #[test]
    fn enter_opens_why_for_the_pod_and_esc_closes_it() {
        let mut a = app();
        key(&mut a, KeyCode::Char('/'));
        typed(&mut a, "trainer-0");
        key(&mut a, KeyCode::Enter);
        key(&mut a, KeyCode::Tab);
        assert_eq!(a.pane, Pane::Pending);
        key(&mut a, KeyCode::Enter);
        let p = a.panel.as_ref().expect("a panel");
        assert_eq!(p.title, "why pod ml/trainer-0");
        assert!(p.lines.iter().any(|l| l.contains("Pending: unschedulable")));
        // Keys scroll the panel, not the table.
        key(&mut a, KeyCode::Down);
        assert_eq!(a.panel.as_ref().unwrap().scroll, 1);
        key(&mut a, KeyCode::Esc);
        assert!(a.panel.is_none());
        assert!(key(&mut a, KeyCode::Char('q')));
    }

    #[test]
    fn enter_on_a_node_explains_it_and_on_a_pool_lists_its_nodes() {
        let mut a = app();
        key(&mut a, KeyCode::BackTab);
        assert_eq!(a.pane, Pane::Pools);
        let first = a.pools()[0].name.clone();
        key(&mut a, KeyCode::Enter);
        assert_eq!(a.filter, first);
        assert_eq!(a.pane, Pane::Nodes);
        assert!(a.panel.is_none());
        let node = a.nodes()[0].name.clone();
        key(&mut a, KeyCode::Enter);
        let p = a.panel.as_ref().unwrap();
        assert_eq!(p.title, format!("why node {node}"));
        assert!(
            p.lines.iter().any(|l| l.contains("NodePool")),
            "{:?}",
            p.lines
        );
    }

    #[test]
    fn the_selection_stays_in_the_table() {
        let mut a = app();
        for _ in 0..500 {
            key(&mut a, KeyCode::Char('j'));
        }
        assert_eq!(a.nodes.selected(), Some(a.nodes().len() - 1));
        key(&mut a, KeyCode::Home);
        assert_eq!(a.nodes.selected(), Some(0));
        key(&mut a, KeyCode::Char('/'));
        typed(&mut a, "no such thing");
        assert_eq!(a.nodes.selected(), None);
        key(&mut a, KeyCode::Enter);
        key(&mut a, KeyCode::Enter);
        assert!(a.panel.is_none());
    }

    #[test]
    fn a_refresh_keeps_the_selection_inside_the_new_rows() {
        let mut a = app();
        key(&mut a, KeyCode::End);
        let last = a.nodes().len() - 1;
        assert_eq!(a.nodes.selected(), Some(last));
        let mut c = crate::demo::cluster().unwrap();
        for name in c.nodeclaims.keys().cloned().collect::<Vec<_>>() {
            c.delete_nodeclaim(&name);
        }
        a.error = Some("list failed".into());
        a.replace(Snapshot::new(c, "demo", crate::demo::now()));
        assert!(a.error.is_none());
        assert!(a.nodes().is_empty());
        assert_eq!(a.nodes.selected(), None);
        // Enter on an empty table opens nothing.
        key(&mut a, KeyCode::Enter);
        assert!(a.panel.is_none());
    }
}
