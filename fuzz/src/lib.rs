//! What the fuzz targets share: a fixed clock, the small test dump, and one analysis pass
//! through to the dashboard's rendered view (as `kelp serve` runs it on each tick).

use std::sync::{Arc, Once};

use chrono::{DateTime, TimeZone, Utc};
use kelp::model::Cluster;
use kelp::view::Inputs;

/// Lets libFuzzer report a stack overflow like any other crash, with the input saved.
///
/// Its SIGSEGV handler runs on the stack that just overflowed, so without this the process
/// dies silently and the input is lost. Call at the start of every input: the handlers
/// are only installed once libFuzzer runs inputs (after any `init:` block).
pub fn catch_stack_overflow() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        const SIZE: usize = 1 << 20;
        let stack: &'static mut [u8] = Box::leak(vec![0u8; SIZE].into_boxed_slice());
        // SAFETY: a leaked (so never freed) buffer becomes this thread's signal stack, and
        // the handlers libFuzzer installed are re-installed unchanged but for SA_ONSTACK.
        unsafe {
            let alt = libc::stack_t {
                ss_sp: stack.as_mut_ptr().cast(),
                ss_flags: 0,
                ss_size: SIZE,
            };
            libc::sigaltstack(&alt, std::ptr::null_mut());
            for signal in [libc::SIGSEGV, libc::SIGBUS] {
                let mut action: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut action) == 0
                    && action.sa_sigaction != libc::SIG_DFL
                {
                    action.sa_flags |= libc::SA_ONSTACK;
                    libc::sigaction(signal, &action, std::ptr::null_mut());
                }
            }
        }
    });
}

/// The small dump the dashboard tests use (two NodePools, a pending pod, events).
pub const SMALL: &str = include_str!("../../tests/data/small.yaml");

/// A fixed clock: the real fixtures' capture time.
pub fn fixed_now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 21, 42, 58).unwrap()
}

/// The small dump as a model.
pub fn small() -> Cluster {
    let mut c = Cluster::default();
    kelp::source::load_str("small.yaml", SMALL, &mut c).expect("tests/data/small.yaml loads");
    c
}

/// Analysis, then the dashboard's page (view model, panels HTML, overview JSON) and the
/// detail pane of a few objects in each tab.
pub fn analyse_and_render(c: &Cluster, now: DateTime<Utc>) {
    let pass = Arc::new(kelp::analysis::run(c, now));
    let page = kelp::web::build_page(
        c,
        pass.clone(),
        Inputs {
            cluster_name: "fuzz",
            price_problem: None,
            forbidden: None,
            stale: None,
            fixed_clock: false,
        },
    );
    assert!(
        !page.panels.as_str().contains("rendering failed"),
        "the panels template failed to render"
    );
    serde_json::from_slice::<serde_json::Value>(page.json.plain()).expect("the overview JSON is JSON");

    let keys = c
        .nodepools
        .keys()
        .take(2)
        .map(|n| format!("NodePool/{n}"))
        .chain(
            c.nodeclaims
                .keys()
                .take(2)
                .map(|n| format!("NodeClaim/{n}")),
        )
        .chain(c.nodes.keys().take(2).map(|n| format!("Node/{n}")))
        .chain(c.pods.keys().take(2).map(|(ns, n)| format!("Pod/{ns}/{n}")));
    for key in keys {
        let Ok(sel) = kelp::web::pane::Selection::parse(&key) else {
            continue;
        };
        for tab in kelp::web::pane::TABS {
            let _ = kelp::web::pane::pane(c, &pass, &sel, tab, None);
        }
    }
}
