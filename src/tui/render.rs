//! Drawing `kelp top`: a header with the cluster's $/hr, the pools, nodes and pending
//! tables, a key line (or the filter being typed), and the `why` panel over them. Every
//! string from the cluster goes through [`clean`] here.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::model::{money, Usage};
use super::{App, Pane};
use crate::explain::text::clean;
use crate::view::display_quantity;

/// A bar of `width` cells and the percentage: `████░░░░  52%`.
pub fn bar(ratio: Option<f64>, width: usize) -> String {
    let Some(r) = ratio.filter(|r| r.is_finite()) else {
        return format!("{}    -", "·".repeat(width));
    };
    let filled = ((r.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!(
        "{}{} {:>3.0}%",
        "█".repeat(filled),
        "░".repeat(width - filled),
        r * 100.0
    )
}

fn level(ratio: Option<f64>) -> Style {
    match ratio {
        Some(r) if r >= 0.9 => Style::default().fg(Color::Red),
        Some(r) if r >= 0.7 => Style::default().fg(Color::Yellow),
        Some(_) => Style::default().fg(Color::Green),
        None => Style::default().fg(Color::DarkGray),
    }
}

fn usage_cell(u: Usage) -> Cell<'static> {
    Cell::from(bar(u.ratio(), 10)).style(level(u.ratio()))
}

/// `requested/allocatable`: cpu in cores (one decimal), memory in Gi.
fn amount(u: Usage, resource: &str) -> String {
    let q = |v: f64| {
        if resource == "cpu" {
            let s = format!("{v:.1}");
            s.strip_suffix(".0").unwrap_or(&s).to_string()
        } else {
            display_quantity(resource, v)
        }
    };
    format!("{}/{}", q(u.requested), q(u.allocatable))
}

fn c(s: &str) -> String {
    clean(s).into_owned()
}

fn block(title: String, focused: bool) -> Block<'static> {
    let style = if focused {
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    };
    Block::default()
        .borders(Borders::ALL)
        .border_style(style)
        .title(Span::styled(title, style))
}

const SELECTED: Style = Style::new().add_modifier(Modifier::REVERSED);

pub fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    let pools = app.pools().len();
    let pending = app.pending().len();
    let [head, pools_area, nodes_area, pending_area, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length((pools as u16 + 3).min(12)),
        Constraint::Min(5),
        Constraint::Length((pending as u16 + 3).clamp(4, 12)),
        Constraint::Length(1),
    ])
    .areas(area);
    header(f, app, head);
    pools_table(f, app, pools_area);
    nodes_table(f, app, nodes_area);
    pending_table(f, app, pending_area);
    key_line(f, app, keys);
    if app.panel.is_some() {
        panel(f, app, area);
    }
}

fn header(f: &mut Frame, app: &App, area: Rect) {
    let t = &app.snap.top;
    let mut spans = vec![
        Span::styled("kelp top ", Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(format!(
            "{} · {} · ",
            c(&t.origin),
            t.now.format("%Y-%m-%d %H:%M:%S UTC")
        )),
        Span::styled(
            format!("total {}", money(t.total_per_hour)),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(
            " · {} pools · {} nodes · {} pending · ",
            t.pools.len(),
            t.nodes.len(),
            t.pending.len()
        )),
        Span::styled(
            format!("{} critical", t.critical),
            Style::default().fg(Color::Red),
        ),
        Span::raw(" "),
        Span::styled(
            format!("{} warning", t.warning),
            Style::default().fg(Color::Yellow),
        ),
    ];
    if let Some(note) = &t.price_note {
        spans.push(Span::styled(
            format!(" · {note}"),
            Style::default().fg(Color::DarkGray),
        ));
    }
    if let Some(e) = &app.error {
        spans.push(Span::styled(
            format!(" · refresh failed: {e}"),
            Style::default().fg(Color::Red),
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn pools_table(f: &mut Frame, app: &mut App, area: Rect) {
    let rows: Vec<Row> = app
        .pools()
        .iter()
        .map(|p| {
            Row::new(vec![
                Cell::from(c(&p.name)).style(if p.ready {
                    Style::default()
                } else {
                    Style::default().fg(Color::Red)
                }),
                Cell::from(p.weight.to_string()),
                Cell::from(p.nodes.to_string()),
                usage_cell(p.cpu),
                Cell::from(amount(p.cpu, "cpu")),
                usage_cell(p.memory),
                Cell::from(amount(p.memory, "memory")),
                Cell::from(money(p.cost_per_hour)),
                Cell::from(
                    p.spot_share
                        .map(|s| format!("{:.0}%", s * 100.0))
                        .unwrap_or_else(|| "-".into()),
                ),
                Cell::from(if p.drifted > 0 {
                    p.drifted.to_string()
                } else {
                    String::new()
                })
                .style(Style::default().fg(Color::Yellow)),
            ])
        })
        .collect();
    let title = format!(" NodePools ({}) · sort {} ", rows.len(), app.sort.label());
    let table = Table::new(
        rows,
        [
            Constraint::Length(20),
            Constraint::Length(6),
            Constraint::Length(5),
            Constraint::Length(15),
            Constraint::Length(13),
            Constraint::Length(15),
            Constraint::Length(17),
            Constraint::Length(10),
            Constraint::Length(5),
            Constraint::Length(7),
        ],
    )
    .flex(Flex::Start)
    .header(
        Row::new([
            "NODEPOOL",
            "WEIGHT",
            "NODES",
            "CPU",
            "REQ/ALLOC",
            "MEMORY",
            "REQ/ALLOC",
            "$/HR",
            "SPOT",
            "DRIFTED",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(block(title, app.pane == Pane::Pools))
    .row_highlight_style(if app.pane == Pane::Pools {
        SELECTED
    } else {
        Style::default()
    });
    f.render_stateful_widget(table, area, &mut app.pools);
}

fn nodes_table(f: &mut Frame, app: &mut App, area: Rect) {
    let rows: Vec<Row> = app
        .nodes()
        .iter()
        .map(|n| {
            Row::new(vec![
                Cell::from(c(&n.name)),
                Cell::from(c(&n.pool)),
                Cell::from(c(&n.instance_type)),
                Cell::from(c(&n.capacity_type)),
                usage_cell(n.cpu),
                usage_cell(n.memory),
                Cell::from(money(n.price)),
                Cell::from(c(&n.age)),
                Cell::from(if n.drifted {
                    c(if n.drift_reason.is_empty() {
                        "drifted"
                    } else {
                        &n.drift_reason
                    })
                } else {
                    String::new()
                })
                .style(Style::default().fg(Color::Yellow)),
                Cell::from(Line::from(vec![
                    Span::styled(c(&n.blocked_by.join(",")), Style::default().fg(Color::Red)),
                    Span::styled(
                        match (n.blocked_by.is_empty(), n.consolidation.as_str()) {
                            (_, "") => String::new(),
                            (true, x) => format!("consolidation: {}", c(x)),
                            (false, x) => format!(" · consolidation: {}", c(x)),
                        },
                        Style::default().fg(Color::DarkGray),
                    ),
                ])),
            ])
        })
        .collect();
    let total = app.snap.top.nodes.len();
    let title = if rows.len() == total {
        format!(" Nodes ({total}) ")
    } else {
        format!(" Nodes ({} of {total}) ", rows.len())
    };
    let table = Table::new(
        rows,
        [
            Constraint::Length(44),
            Constraint::Length(11),
            Constraint::Length(13),
            Constraint::Length(9),
            Constraint::Length(15),
            Constraint::Length(15),
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Length(12),
            Constraint::Min(10),
        ],
    )
    .header(
        Row::new([
            "NODE",
            "NODEPOOL",
            "TYPE",
            "CAPACITY",
            "CPU",
            "MEMORY",
            "$/HR",
            "AGE",
            "DRIFT",
            "BLOCKED BY · CONSOLIDATION",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(block(title, app.pane == Pane::Nodes))
    .row_highlight_style(if app.pane == Pane::Nodes {
        SELECTED
    } else {
        Style::default()
    });
    f.render_stateful_widget(table, area, &mut app.nodes);
}

fn pending_table(f: &mut Frame, app: &mut App, area: Rect) {
    let rows: Vec<Row> = app
        .pending()
        .iter()
        .map(|p| {
            Row::new(vec![
                Cell::from(c(&format!("{}/{}", p.namespace, p.name))),
                Cell::from(c(&p.pending_for)),
                Cell::from(c(&p.requests)),
                Cell::from(c(&p.verdict)),
            ])
        })
        .collect();
    let total = app.snap.top.pending.len();
    let title = if rows.len() == total {
        format!(" Pending pods ({total}) ")
    } else {
        format!(" Pending pods ({} of {total}) ", rows.len())
    };
    let table = Table::new(
        rows,
        [
            Constraint::Length(44),
            Constraint::Length(8),
            Constraint::Length(22),
            Constraint::Min(20),
        ],
    )
    .header(
        Row::new(["POD", "PENDING", "REQUESTS", "VERDICT"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(block(title, app.pane == Pane::Pending))
    .row_highlight_style(if app.pane == Pane::Pending {
        SELECTED
    } else {
        Style::default()
    });
    f.render_stateful_widget(table, area, &mut app.pending);
}

fn key_line(f: &mut Frame, app: &App, area: Rect) {
    let line = if app.editing {
        Line::from(vec![
            Span::styled("/", Style::default().fg(Color::Cyan)),
            Span::raw(c(&app.filter)),
            Span::styled("█", Style::default().fg(Color::Cyan)),
            Span::styled(
                "   Enter keeps the filter · Esc clears it",
                Style::default().fg(Color::DarkGray),
            ),
        ])
    } else {
        let mut spans = Vec::new();
        if !app.filter.is_empty() {
            spans.push(Span::styled(
                format!("filter: {} ", c(&app.filter)),
                Style::default().fg(Color::Cyan),
            ));
        }
        spans.push(Span::styled(
            "/ filter · s sort · Tab pane · ↑↓/jk move · Enter why · Esc close · q quit",
            Style::default().fg(Color::DarkGray),
        ));
        if app.live {
            spans.push(Span::styled(" · live", Style::default().fg(Color::Green)));
        }
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}

fn panel(f: &mut Frame, app: &App, area: Rect) {
    let Some(p) = &app.panel else { return };
    let w = area.width.saturating_sub(8).max(20).min(area.width);
    let h = area.height.saturating_sub(4).max(5).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    let text: Vec<Line> = p.lines.iter().map(|l| Line::raw(l.clone())).collect();
    let para = Paragraph::new(text)
        .block(block(
            format!(" {} · ↑↓ scroll · Esc close ", p.title),
            true,
        ))
        .wrap(Wrap { trim: false })
        .scroll((p.scroll, 0));
    f.render_widget(para, r);
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;
    use crate::tui::Snapshot;

    fn screen(app: &mut App) -> String {
        screen_of(app, 160, 45)
    }

    fn screen_of(app: &mut App, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, app)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn bars_fill_to_the_ratio() {
        assert_eq!(bar(Some(0.5), 10), "█████░░░░░  50%");
        assert_eq!(bar(Some(1.2), 4), "████ 120%");
        assert_eq!(bar(None, 4), "····    -");
        let u = Usage {
            requested: 11.63,
            allocatable: 36.0,
        };
        assert_eq!(amount(u, "cpu"), "11.6/36");
    }

    #[test]
    fn the_demo_draws_pools_nodes_pending_and_the_total() {
        let snap = Snapshot::new(crate::demo::cluster().unwrap(), "demo", crate::demo::now());
        let total = money(snap.top.total_per_hour);
        let mut app = App::new(snap, false);
        let s = screen(&mut app);
        assert!(s.contains(&format!("total {total}")), "{s}");
        for want in [
            "NodePools",
            "default",
            "gpu",
            "Nodes (",
            "Pending pods",
            "trainer-0",
        ] {
            assert!(s.contains(want), "{want} missing:\n{s}");
        }
        // Each pending pod's one-line verdict (its start: the column is cut to fit).
        let verdict: String = app.snap.top.pending[0].verdict.chars().take(40).collect();
        assert!(s.contains(&verdict), "{verdict} missing:\n{s}");
        // Bars and amounts: cpu in cores, memory in Gi.
        assert!(s.contains('█') && s.contains('%'), "{s}");
        assert!(s.contains("Gi/"), "{s}");
    }

    #[test]
    fn control_characters_from_the_cluster_are_escaped() {
        let mut c = crate::demo::cluster().unwrap();
        let mut pool = c.nodepools.values().next().unwrap().clone();
        pool.metadata.name = "evil\x1b]0;owned\x07pool".into();
        c.nodepools.insert(pool.metadata.name.clone(), pool);
        let mut app = App::new(Snapshot::new(c, "demo\x1b[2J", crate::demo::now()), false);
        let s = screen(&mut app);
        assert!(!s.contains('\x1b') && !s.contains('\x07'));
        assert!(s.contains("evil\\x1b]0;owned\\x07pool"), "{s}");
        assert!(s.contains("demo\\x1b[2J"), "{s}");
    }

    #[test]
    fn tiny_terminals_draw_without_panicking() {
        let snap = Snapshot::new(crate::demo::cluster().unwrap(), "demo", crate::demo::now());
        let mut app = App::new(snap, true);
        app.on_key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Enter,
            crossterm::event::KeyModifiers::NONE,
        ));
        assert!(app.panel.is_some());
        for (w, h) in [(1, 1), (10, 3), (40, 10), (80, 24)] {
            let s = screen_of(&mut app, w, h);
            assert_eq!(s.lines().count(), h as usize);
        }
        let s = screen_of(&mut app, 80, 24);
        assert!(s.contains("why node"), "{s}");
    }
}
