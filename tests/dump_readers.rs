//! Every way a dump reaches kelp gives the same answer, byte for byte, and the same answer
//! kelp gave before its reader was rewritten: `tests/fixtures/bench-small/doctor.{json,txt}`
//! were first the output of the previous reader (the one that streamed every file through
//! `RawValue`) on the small benchmark dump `bench/gen-dump.py` writes with the parameters
//! below; when the analysis itself changes, they are rewritten from `kelp doctor` on that
//! dump (the consolidation answer added one `consolidation-blocked` finding; a pending pod's
//! summary now quotes only the first three of Karpenter's reasons; an expired NodeClaim not
//! yet deleting is held by nothing, as Karpenter's expiry deletes it at once; a drifted
//! NodeClaim's finding says what its reason means). The dump is generated
//! here, compact and with kubectl's indentation, then read mapped, streamed from stdin,
//! gzipped (as a file, in a folder and on stdin). A mapped file has the parts replicas
//! share read once per distinct text (src/model/memo.rs); a stream parses each.

use std::path::Path;
use std::process::Command as Std;
use std::time::Duration;

use assert_cmd::Command;

const NOW: &str = "2026-11-21T10:00:00Z";
const GEN: [&str; 10] = [
    "--nodes",
    "20",
    "--pods",
    "600",
    "--events",
    "200",
    "--nodepools",
    "20",
    "--seed",
    "7",
];

fn kelp() -> Command {
    let mut c = Command::cargo_bin("kelp").unwrap();
    c.env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(120));
    c
}

fn generate(out: &Path, extra: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/gen-dump.py");
    let status = Std::new("python3")
        .arg(script)
        .args(GEN)
        .args(extra)
        .arg("-o")
        .arg(out)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("python3 runs bench/gen-dump.py");
    assert!(status.success());
}

fn gzip(from: &Path, to: &Path) {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&std::fs::read(from).unwrap()).unwrap();
    std::fs::write(to, gz.finish().unwrap()).unwrap();
}

/// `kelp doctor` with `args` (and `stdin`), its stdout; exit 1 (critical findings) is
/// the expected answer for this dump.
fn doctor(args: &[&str], stdin: Option<Vec<u8>>) -> String {
    let mut c = kelp();
    c.arg("doctor").args(args).args(["--now", NOW]);
    if let Some(bytes) = stdin {
        c.write_stdin(bytes);
    }
    let out = c.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_reader_gives_the_answer_the_previous_reader_gave() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bench-small");
    let want_json = std::fs::read_to_string(fixtures.join("doctor.json")).unwrap();
    let want_text = std::fs::read_to_string(fixtures.join("doctor.txt")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let compact = dir.path().join("compact.json");
    let indented = dir.path().join("indented.json");
    generate(&compact, &[]);
    generate(&indented, &["--indent", "4"]);
    let folder = dir.path().join("bundle");
    std::fs::create_dir(&folder).unwrap();
    let gz = folder.join("cluster.json.gz");
    gzip(&compact, &gz);
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let cases: Vec<(&str, Vec<String>, Option<Vec<u8>>)> = vec![
        ("mapped", vec![s(&compact)], None),
        ("indented", vec![s(&indented)], None),
        (
            "stdin",
            vec!["-".into()],
            Some(std::fs::read(&indented).unwrap()),
        ),
        ("gzip file", vec![s(&gz)], None),
        ("gzip in a folder", vec![s(&folder)], None),
        (
            "gzip on stdin",
            vec!["-".into()],
            Some(std::fs::read(&gz).unwrap()),
        ),
    ];
    for (name, paths, stdin) in cases {
        let mut args = vec![];
        for p in &paths {
            args.extend(["--from", p.as_str()]);
        }
        let mut json_args = args.clone();
        json_args.extend(["-o", "json"]);
        let got = doctor(&json_args, stdin.clone());
        assert!(got == want_json, "{name}: the JSON report differs");
        let got = doctor(&args, stdin);
        assert!(got == want_text, "{name}: the table differs");
    }
}
