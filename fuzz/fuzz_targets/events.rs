//! Karpenter's event message parsers (src/karpenter/events.rs) and the dashboard's
//! insufficient-capacity reader: every parser is documented as total, so any text must
//! yield an answer without a panic, and the pieces they return are cut from the input.
#![no_main]

use kelp::karpenter::events;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kelp_fuzz::catch_stack_overflow();
    let message = String::from_utf8_lossy(data);
    let message = message.as_ref();

    let failed = events::parse_failed_scheduling(message);
    for segment in &failed.segments {
        assert!(
            message.contains(segment.message.as_str()),
            "segment {:?} is not a substring of the message",
            segment.message
        );
    }
    let _ = events::parse_nominated(message);

    let blocker = events::parse_disruption_blocked(message);
    assert!(
        message.contains(blocker.message.as_str()),
        "blocker text {:?} is not a substring of the message",
        blocker.message
    );

    let _ = events::parse_launch_error(message);
    // A reason read back is the text it was read from.
    if let Some(r) = events::Reason::parse(message) {
        assert_eq!(r.as_str(), message);
    }
});
