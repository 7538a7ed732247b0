//! The workspace tools (`ironloop::sources::workspace`): each way out of the root is
//! refused (`..`, absolute paths, symlinks leading out — for reading, writing,
//! editing, listing and searching), edit_file's uniqueness rule, .gitignore in
//! list/search, the caps and their notes, and bash's timeout, truncation and
//! cancellation (the command's processes are gone afterwards).
#![cfg(feature = "workspace")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ironloop::sources::workspace::{workspace_tools, WorkspaceOptions};
use ironloop::{Executor, RunContext, ToolCall, ToolContext, ToolError, ToolRegistry};
use serde_json::{json, Value};

/// `outer/root` is the workspace; `outer/outside` holds what must stay out of reach.
struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    exec: Executor,
}

fn ws_with(opts: WorkspaceOptions) -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "TOP SECRET\n").unwrap();
    let reg = Arc::new(ToolRegistry::new());
    for t in workspace_tools(&root, opts).unwrap() {
        reg.register(t).unwrap();
    }
    Ws {
        _dir: dir,
        root,
        outside,
        exec: Executor::new(reg),
    }
}

fn ws() -> Ws {
    ws_with(WorkspaceOptions::default())
}

fn bash_ws() -> Ws {
    ws_with(WorkspaceOptions {
        allow_bash: true,
        ..Default::default()
    })
}

impl Ws {
    async fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
        self.call_with(name, args, &RunContext::default()).await
    }

    async fn call_with(
        &self,
        name: &str,
        args: Value,
        run: &RunContext,
    ) -> Result<String, ToolError> {
        let mut r = self
            .exec
            .execute(&[ToolCall::new("c1", name, args)], run)
            .await;
        r.pop().unwrap().outcome.map(|o| o.content.text())
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// An error result of the kind the model reads, whose text names `path`.
fn refused(r: Result<String, ToolError>, path: &str) {
    match r {
        Err(e @ ToolError::InvalidArgs { .. }) => {
            let text = e.to_string();
            assert!(text.contains(path), "{text:?} should name {path:?}");
        }
        other => panic!("{path}: expected a refusal, got {other:?}"),
    }
}

fn failed_with(r: Result<String, ToolError>, needles: &[&str]) {
    match r {
        Err(e @ ToolError::Failed { .. }) => {
            let text = e.to_string();
            for n in needles {
                assert!(text.contains(n), "{text:?} should contain {n:?}");
            }
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn every_tool_refuses_dotdot_and_absolute_paths() {
    let w = ws();
    w.write("a/file.txt", "hello\n");
    let secret = w.outside.join("secret.txt");
    let secret = secret.to_str().unwrap();
    let inside_abs = w.root.join("a/file.txt");
    let inside_abs = inside_abs.to_str().unwrap();
    for path in [
        "../outside/secret.txt",
        "/etc/passwd",
        secret,
        inside_abs,
        "a/../../outside/secret.txt",
        "a/../..",
        "./../x",
    ] {
        refused(w.call("read_file", json!({"path": path})).await, path);
        refused(
            w.call("write_file", json!({"path": path, "content": "x"}))
                .await,
            path,
        );
        refused(
            w.call("edit_file", json!({"path": path, "old": "TOP", "new": "x"}))
                .await,
            path,
        );
        refused(w.call("list_files", json!({"path": path})).await, path);
        refused(
            w.call("search", json!({"pattern": "SECRET", "path": path}))
                .await,
            path,
        );
    }
    // Nothing was written outside, nor changed.
    assert!(!w.root.parent().unwrap().join("x").exists());
    assert_eq!(
        std::fs::read_to_string(w.outside.join("secret.txt")).unwrap(),
        "TOP SECRET\n"
    );
    // `..` that stays inside is fine.
    assert_eq!(
        w.call("read_file", json!({"path": "a/../a/./file.txt"}))
            .await
            .unwrap(),
        "hello\n"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_leading_out_are_refused() {
    let w = ws();
    symlink(&w.outside, &w.root.join("dir_out"));
    symlink(&w.outside.join("secret.txt"), &w.root.join("file_out"));
    symlink(&w.outside.join("not_yet.txt"), &w.root.join("dangling"));
    w.write("sub/a.txt", "inside\n");
    symlink(&w.root.join("sub"), &w.root.join("dir_in"));

    // Read.
    refused(
        w.call("read_file", json!({"path": "file_out"})).await,
        "file_out",
    );
    refused(
        w.call("read_file", json!({"path": "dir_out/secret.txt"}))
            .await,
        "dir_out/secret.txt",
    );
    // Write: through a link to a directory, onto a link to a file, through a
    // dangling link (which would create its target outside).
    refused(
        w.call(
            "write_file",
            json!({"path": "dir_out/new.txt", "content": "x"}),
        )
        .await,
        "dir_out/new.txt",
    );
    refused(
        w.call("write_file", json!({"path": "file_out", "content": "x"}))
            .await,
        "file_out",
    );
    refused(
        w.call("write_file", json!({"path": "dangling", "content": "x"}))
            .await,
        "dangling",
    );
    refused(
        w.call(
            "write_file",
            json!({"path": "dir_out/deeper/new.txt", "content": "x"}),
        )
        .await,
        "dir_out/deeper/new.txt",
    );
    refused(
        w.call(
            "edit_file",
            json!({"path": "file_out", "old": "TOP", "new": "x"}),
        )
        .await,
        "file_out",
    );
    assert!(!w.outside.join("new.txt").exists());
    assert!(!w.outside.join("not_yet.txt").exists());
    assert!(!w.outside.join("deeper").exists());
    assert_eq!(
        std::fs::read_to_string(w.outside.join("secret.txt")).unwrap(),
        "TOP SECRET\n"
    );
    // List: the link's contents are out of reach, by path or by walking.
    refused(
        w.call("list_files", json!({"path": "dir_out"})).await,
        "dir_out",
    );
    let listing = w.call("list_files", json!({})).await.unwrap();
    assert!(listing.lines().any(|l| l == "dir_out"), "{listing}");
    assert!(!listing.contains("secret"), "{listing}");
    // Search never reads through a link either.
    refused(
        w.call("search", json!({"pattern": "SECRET", "path": "dir_out"}))
            .await,
        "dir_out",
    );
    let found = w
        .call("search", json!({"pattern": "SECRET"}))
        .await
        .unwrap();
    assert!(found.starts_with("[no matches"), "{found}");
    // A link that stays inside the root works.
    assert_eq!(
        w.call("read_file", json!({"path": "dir_in/a.txt"}))
            .await
            .unwrap(),
        "inside\n"
    );
    w.call(
        "write_file",
        json!({"path": "dir_in/b.txt", "content": "b"}),
    )
    .await
    .unwrap();
    assert_eq!(w.read("sub/b.txt"), "b");
}

#[tokio::test]
async fn read_file_windows_and_notes() {
    let w = ws_with(WorkspaceOptions {
        default_read_lines: 3,
        max_output_bytes: 40,
        ..Default::default()
    });
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    w.write("ten.txt", &text);
    let r = w
        .call("read_file", json!({"path": "ten.txt"}))
        .await
        .unwrap();
    assert_eq!(
        r,
        "line 1\nline 2\nline 3\n[truncated: showing lines 1-3 of 10; call read_file with \
         offset=4 to read on]"
    );
    let r = w
        .call(
            "read_file",
            json!({"path": "ten.txt", "offset": 9, "limit": 5}),
        )
        .await
        .unwrap();
    assert_eq!(r, "line 9\nline 10\n");
    // The byte cap (40) stops before the line limit.
    let r = w
        .call("read_file", json!({"path": "ten.txt", "limit": 10}))
        .await
        .unwrap();
    assert!(r.starts_with("line 1\n"), "{r}");
    assert!(r.contains("of 10 (a result holds at most 40 bytes)"), "{r}");
    assert!(r.contains("offset=6"), "{r}");
    // A line longer than the cap: its start.
    w.write("long.txt", &"x".repeat(100));
    let r = w
        .call("read_file", json!({"path": "long.txt"}))
        .await
        .unwrap();
    assert!(r.starts_with(&"x".repeat(40)), "{r}");
    assert!(r.contains("line 1 is longer than 40 bytes"), "{r}");
    // Errors name the path and say what to do.
    failed_with(
        w.call("read_file", json!({"path": "ten.txt", "offset": 11}))
            .await,
        &["`ten.txt` has 10 lines", "offset 11"],
    );
    failed_with(
        w.call("read_file", json!({"path": "nope.txt"})).await,
        &["`nope.txt` does not exist", "list_files"],
    );
    w.write("d/x", "");
    failed_with(
        w.call("read_file", json!({"path": "d"})).await,
        &["`d` is a directory"],
    );
    assert_eq!(
        w.call("read_file", json!({"path": "d/x"})).await.unwrap(),
        "[`d/x` is empty]"
    );
    std::fs::write(w.root.join("bin.dat"), b"\x00\x01\x02binary").unwrap();
    failed_with(
        w.call("read_file", json!({"path": "bin.dat"})).await,
        &["`bin.dat` is not a UTF-8 text file"],
    );
    // A pipe would block a reader: refused.
    #[cfg(unix)]
    {
        let fifo = w.root.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if made {
            failed_with(
                w.call("read_file", json!({"path": "fifo"})).await,
                &["`fifo` is not a regular file"],
            );
            failed_with(
                w.call("search", json!({"pattern": "x", "path": "fifo"}))
                    .await,
                &["`fifo` is not a regular file"],
            );
            let found = w.call("search", json!({"pattern": "x"})).await.unwrap();
            assert!(found.starts_with("[no matches"), "{found}");
        }
    }
    // The schema is checked first: offset is 1-based.
    assert!(matches!(
        w.call("read_file", json!({"path": "ten.txt", "offset": 0}))
            .await,
        Err(ToolError::InvalidArgs { .. })
    ));
}

#[tokio::test]
async fn write_file_creates_and_replaces() {
    let w = ws();
    let r = w
        .call(
            "write_file",
            json!({"path": "new/dir/f.txt", "content": "abc"}),
        )
        .await
        .unwrap();
    assert_eq!(r, "Wrote 3 bytes to `new/dir/f.txt` (a new file).");
    assert_eq!(w.read("new/dir/f.txt"), "abc");
    let r = w
        .call(
            "write_file",
            json!({"path": "new/dir/f.txt", "content": "abcdef"}),
        )
        .await
        .unwrap();
    assert!(r.contains("replacing its previous 3 bytes"), "{r}");
    assert_eq!(w.read("new/dir/f.txt"), "abcdef");
    failed_with(
        w.call("write_file", json!({"path": "new", "content": "x"}))
            .await,
        &["`new` is a directory"],
    );
    failed_with(
        w.call("write_file", json!({"path": ".", "content": "x"}))
            .await,
        &["is a directory"],
    );
    // A parent that is a file.
    failed_with(
        w.call(
            "write_file",
            json!({"path": "new/dir/f.txt/g", "content": "x"}),
        )
        .await,
        &["new/dir/f.txt/g"],
    );
}

#[tokio::test]
async fn edit_file_needs_exactly_one_occurrence() {
    let w = ws();
    w.write("f.py", "a = 1\nb = 2\na = 1\nc = 3\n");
    failed_with(
        w.call(
            "edit_file",
            json!({"path": "f.py", "old": "a = 1", "new": "a = 9"}),
        )
        .await,
        &["occurs 2 times in `f.py`", "lines 1, 3", "exactly once"],
    );
    failed_with(
        w.call(
            "edit_file",
            json!({"path": "f.py", "old": "z = 0", "new": "x"}),
        )
        .await,
        &["was not found in `f.py`", "exactly"],
    );
    assert_eq!(w.read("f.py"), "a = 1\nb = 2\na = 1\nc = 3\n");
    let r = w
        .call(
            "edit_file",
            json!({"path": "f.py", "old": "b = 2\na = 1", "new": "b = 2\na = 7"}),
        )
        .await
        .unwrap();
    assert!(r.starts_with("Edited `f.py`"), "{r}");
    assert!(r.contains("at line 2"), "{r}");
    assert_eq!(w.read("f.py"), "a = 1\nb = 2\na = 7\nc = 3\n");
    // Deleting, and overlapping occurrences count as several.
    w.call(
        "edit_file",
        json!({"path": "f.py", "old": "c = 3\n", "new": ""}),
    )
    .await
    .unwrap();
    assert_eq!(w.read("f.py"), "a = 1\nb = 2\na = 7\n");
    w.write("aa.txt", "aaa");
    failed_with(
        w.call(
            "edit_file",
            json!({"path": "aa.txt", "old": "aa", "new": "b"}),
        )
        .await,
        &["occurs 2 times"],
    );
    refused(
        w.call("edit_file", json!({"path": "f.py", "old": "", "new": "x"}))
            .await,
        "f.py",
    );
    failed_with(
        w.call(
            "edit_file",
            json!({"path": "missing.py", "old": "a", "new": "b"}),
        )
        .await,
        &["`missing.py` does not exist"],
    );
}

fn git_tree(w: &Ws) {
    w.write(".gitignore", "*.log\nbuild/\n");
    w.write("src/main.py", "print('hello')\nTODO: fix\n");
    w.write("src/util.py", "def f():\n    return 'todo later'\n");
    w.write("src/notes.md", "TODO: docs\n");
    w.write("src/.gitignore", "secret.py\n");
    w.write("src/secret.py", "TODO: hidden by the nested .gitignore\n");
    w.write("build/out.txt", "TODO: build output\n");
    w.write("debug.log", "TODO: log line\n");
    w.write(".git/config", "TODO: git internals\n");
    w.write(".github/ci.yml", "TODO: ci\n");
}

#[tokio::test]
async fn list_files_respects_gitignore_globs_and_caps() {
    let w = ws();
    git_tree(&w);
    let all = w.call("list_files", json!({})).await.unwrap();
    assert_eq!(
        all.lines().collect::<Vec<_>>(),
        [
            ".github/",
            ".github/ci.yml",
            ".gitignore",
            "src/",
            "src/.gitignore",
            "src/main.py",
            "src/notes.md",
            "src/util.py",
        ]
    );
    let py = w
        .call("list_files", json!({"pattern": "*.py"}))
        .await
        .unwrap();
    assert_eq!(py, "src/main.py\nsrc/util.py");
    let sub = w
        .call("list_files", json!({"path": "src", "pattern": "src/*.md"}))
        .await
        .unwrap();
    assert_eq!(sub, "src/notes.md");
    // The root's .gitignore applies below a subdirectory too.
    w.write("src/deep/trace.log", "x");
    let deep = w
        .call("list_files", json!({"path": "src/deep"}))
        .await
        .unwrap();
    assert_eq!(deep, "[`src/deep` is empty]");
    assert_eq!(
        w.call("list_files", json!({"path": "src", "pattern": "*.rs"}))
            .await
            .unwrap(),
        "[nothing under `src` matches `*.rs`]"
    );
    refused(w.call("list_files", json!({"pattern": "a[b"})).await, "a[b");
    // The cap.
    let small = ws_with(WorkspaceOptions {
        max_list_entries: 3,
        ..Default::default()
    });
    for i in 0..10 {
        small.write(&format!("f{i}.txt"), "");
    }
    let r = small.call("list_files", json!({})).await.unwrap();
    assert_eq!(
        r,
        "f0.txt\nf1.txt\nf2.txt\n[truncated: 3 entries shown, 7 more not shown; narrow the \
         listing with `path` or `pattern`]"
    );
}

#[tokio::test]
async fn search_respects_gitignore_and_reports_matches() {
    let w = ws();
    git_tree(&w);
    let r = w.call("search", json!({"pattern": "TODO"})).await.unwrap();
    assert_eq!(
        r,
        ".github/ci.yml:1: TODO: ci\nsrc/main.py:2: TODO: fix\nsrc/notes.md:1: TODO: docs"
    );
    let r = w
        .call(
            "search",
            json!({"pattern": "todo", "ignore_case": true, "glob": "*.py"}),
        )
        .await
        .unwrap();
    assert_eq!(
        r,
        "src/main.py:2: TODO: fix\nsrc/util.py:2:     return 'todo later'"
    );
    let r = w
        .call(
            "search",
            json!({"pattern": "^print", "path": "src/main.py"}),
        )
        .await
        .unwrap();
    assert_eq!(r, "src/main.py:1: print('hello')");
    assert_eq!(
        w.call("search", json!({"pattern": "nowhere", "path": "src"}))
            .await
            .unwrap(),
        "[no matches for `nowhere` in `src`]"
    );
    refused(
        w.call("search", json!({"pattern": "(unclosed"})).await,
        "regular expression",
    );
    // Binary files are skipped.
    std::fs::write(w.root.join("blob.bin"), b"TODO\x00\x01").unwrap();
    let r = w
        .call("search", json!({"pattern": "TODO", "glob": "*.bin"}))
        .await
        .unwrap();
    assert!(r.starts_with("[no matches"), "{r}");
    // The cap.
    let small = ws_with(WorkspaceOptions {
        max_search_matches: 2,
        ..Default::default()
    });
    small.write("many.txt", &"hit\n".repeat(5));
    let r = small
        .call("search", json!({"pattern": "hit"}))
        .await
        .unwrap();
    assert_eq!(
        r,
        "many.txt:1: hit\nmany.txt:2: hit\n[stopped after 2 matches; narrow the search with \
         `path`, `glob` or a more specific pattern]"
    );
}

#[tokio::test]
async fn bash_is_opt_in() {
    let tools = workspace_tools(std::env::temp_dir(), WorkspaceOptions::default()).unwrap();
    assert!(tools.iter().all(|t| t.definition().name != "bash"));
    let w = ws();
    assert!(matches!(
        w.call("bash", json!({"command": "true"})).await,
        Err(ToolError::NotFound { .. })
    ));
}

#[tokio::test]
async fn bash_reports_exit_code_and_labelled_streams() {
    let w = bash_ws();
    w.write("hello.txt", "hi\n");
    let r = w
        .call(
            "bash",
            json!({"command": "pwd; cat hello.txt; echo oops >&2; exit 3"}),
        )
        .await
        .unwrap();
    let root = std::fs::canonicalize(&w.root).unwrap();
    assert_eq!(
        r,
        format!(
            "exit code: 3\n[stdout]\n{}\nhi\n[stderr]\noops",
            root.display()
        )
    );
    assert_eq!(
        w.call("bash", json!({"command": "true"})).await.unwrap(),
        "exit code: 0 (no output)"
    );
    // No stdin: a command that reads it sees end of file at once.
    assert_eq!(
        w.call("bash", json!({"command": "cat"})).await.unwrap(),
        "exit code: 0 (no output)"
    );
    // Out-of-range timeouts are refused by the schema.
    assert!(matches!(
        w.call("bash", json!({"command": "true", "timeout_seconds": 0}))
            .await,
        Err(ToolError::InvalidArgs { .. })
    ));
    assert!(matches!(
        w.call("bash", json!({"command": "true", "timeout_seconds": 601}))
            .await,
        Err(ToolError::InvalidArgs { .. })
    ));
}

#[tokio::test]
async fn bash_truncates_long_output_with_a_note() {
    let w = ws_with(WorkspaceOptions {
        allow_bash: true,
        max_output_bytes: 1000,
        ..Default::default()
    });
    let r = w
        .call(
            "bash",
            json!({"command": "head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"}),
        )
        .await
        .unwrap();
    assert!(
        r.contains("[truncated: 99005 bytes omitted]"),
        "{}",
        &r[..200]
    );
    assert!(r.ends_with("END"), "{r}");
    assert!(r.len() < 1200, "{}", r.len());
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

#[cfg(target_os = "linux")]
fn wait_dead(pid: u32) {
    let t = Instant::now();
    while alive(pid) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "process {pid} survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")]
fn read_pid(w: &Ws) -> u32 {
    let t = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(w.root.join("pid.txt")) {
            if let Ok(p) = s.trim().parse() {
                return p;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(5), "no pid.txt");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn bash_timeout_kills_the_command_and_its_children() {
    let w = bash_ws();
    let t = Instant::now();
    let r = w
        .call(
            "bash",
            json!({"command": "echo started; sleep 30 & echo $! > pid.txt; wait",
                   "timeout_seconds": 0.5}),
        )
        .await;
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    failed_with(r, &["timed out after 0.5s", "was killed", "started"]);
    wait_dead(read_pid(&w));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn bash_kills_what_it_leaves_in_the_background() {
    let w = bash_ws();
    let t = Instant::now();
    let r = w
        .call(
            "bash",
            json!({"command": "sleep 30 & echo $! > pid.txt; echo bye"}),
        )
        .await
        .unwrap();
    assert_eq!(r, "exit code: 0\n[stdout]\nbye");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    wait_dead(read_pid(&w));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_the_run_kills_the_command() {
    let w = bash_ws();
    let run = RunContext::default();
    let cancel = run.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let t = Instant::now();
    let r = w
        .call_with(
            "bash",
            json!({"command": "sleep 30 & echo $! > pid.txt; wait"}),
            &run,
        )
        .await;
    assert!(matches!(r, Err(ToolError::Cancelled { .. })), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    wait_dead(read_pid(&w));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_executor_timeout_kills_the_command_too() {
    let w = ws_with(WorkspaceOptions {
        allow_bash: true,
        timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    });
    let r = w
        .call(
            "bash",
            json!({"command": "sleep 30 & echo $! > pid.txt; wait"}),
        )
        .await;
    assert!(matches!(r, Err(ToolError::Timeout { .. })), "{r:?}");
    wait_dead(read_pid(&w));
}

#[tokio::test]
async fn a_direct_call_watches_its_cancel_token() {
    let dir = tempfile::tempdir().unwrap();
    let tools = workspace_tools(
        dir.path(),
        WorkspaceOptions {
            allow_bash: true,
            ..Default::default()
        },
    )
    .unwrap();
    let bash = tools
        .iter()
        .find(|t| t.definition().name == "bash")
        .unwrap();
    let ctx = ToolContext::new("c1", "bash");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let t = Instant::now();
    let r = bash.call(json!({"command": "sleep 30"}), ctx).await;
    assert!(matches!(r, Err(ToolError::Cancelled { .. })), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(5));
    // A cancelled file tool gives up too.
    let read = tools
        .iter()
        .find(|t| t.definition().name == "read_file")
        .unwrap();
    let ctx = ToolContext::new("c2", "read_file");
    ctx.cancel.cancel();
    let r = read.call(json!({"path": "x"}), ctx).await;
    assert!(
        matches!(
            r,
            Err(ToolError::Cancelled { .. }) | Err(ToolError::Failed { .. })
        ),
        "{r:?}"
    );
}

#[test]
fn a_root_that_is_not_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert!(workspace_tools(dir.path().join("missing"), WorkspaceOptions::default()).is_err());
    let f = dir.path().join("f");
    std::fs::write(&f, "").unwrap();
    assert!(workspace_tools(&f, WorkspaceOptions::default()).is_err());
    let defs: Vec<Value> = workspace_tools(dir.path(), WorkspaceOptions::default())
        .unwrap()
        .iter()
        .map(|t| t.definition().parameters.clone())
        .collect();
    // Every schema is an object schema that a registry accepts.
    for d in defs {
        assert_eq!(d["type"], "object");
    }
}

// ------------------------------------------------- edges: links, races, escapes

#[tokio::test]
async fn a_hard_link_to_an_outside_file_is_neither_read_nor_written() {
    let w = ws();
    let secret = w.outside.join("secret.txt");
    std::fs::hard_link(&secret, w.root.join("link.txt")).unwrap();
    failed_with(
        w.call("read_file", json!({"path": "link.txt"})).await,
        &["cannot read `link.txt`", "2 hard links"],
    );
    failed_with(
        w.call(
            "write_file",
            json!({"path": "link.txt", "content": "pwned"}),
        )
        .await,
        &["cannot write `link.txt`", "2 hard links"],
    );
    failed_with(
        w.call(
            "edit_file",
            json!({"path": "link.txt", "old": "TOP", "new": "pwned"}),
        )
        .await,
        &["cannot read `link.txt`", "hard links"],
    );
    let r = w
        .call("search", json!({"pattern": "SECRET"}))
        .await
        .unwrap();
    assert!(!r.contains("TOP SECRET"), "{r}");
    assert!(
        r.contains("skipped 1 file(s) with several hard links"),
        "{r}"
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "TOP SECRET\n");
    // An ordinary file still reads and writes.
    w.write("plain.txt", "hello\n");
    assert_eq!(
        w.call("read_file", json!({"path": "plain.txt"}))
            .await
            .unwrap(),
        "hello\n"
    );
}

/// A file swapped for a symlink leading out (by rename, atomically) while
/// read_file reads it, 10,000 times at least and until the swapper has swapped 200
/// times and both outcomes were seen (a loaded machine may starve the swapper at
/// first): never the outside content.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_swapped_in_during_reads_never_leads_out() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let w = ws();
    let (root, secret) = (w.root.clone(), w.outside.join("secret.txt"));
    symlink(&secret, &root.join("evil"));
    std::fs::write(root.join("f.txt"), "inside\n").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps, root) = (stop.clone(), swaps.clone(), root.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // f.txt is a regular file, then a symlink to the outside, then again…
                std::fs::write(root.join("tmp"), "inside\n").unwrap();
                std::fs::rename(root.join("tmp"), root.join("f.txt")).ok();
                std::fs::remove_file(root.join("tmp2")).ok();
                symlink(
                    &std::fs::read_link(root.join("evil")).unwrap(),
                    &root.join("tmp2"),
                );
                std::fs::rename(root.join("tmp2"), root.join("f.txt")).ok();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let (mut reads, mut inside, mut refused) = (0u64, 0, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while reads < 10_000
        || ((swaps.load(Ordering::Relaxed) < 200 || inside == 0 || refused == 0)
            && std::time::Instant::now() < deadline)
    {
        reads += 1;
        match w.call("read_file", json!({"path": "f.txt"})).await {
            Ok(text) => {
                assert_eq!(text, "inside\n", "read_file returned outside content");
                inside += 1;
            }
            Err(e) => {
                let text = e.to_string();
                assert!(!text.contains("TOP SECRET"), "{text}");
                refused += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!("{reads} reads during {swaps} swaps: {inside} inside, {refused} refused");
    assert!(swaps >= 200, "the race did not run: {swaps} swaps");
    assert!(
        inside > 0 && refused > 0,
        "{inside} inside, {refused} refused"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn bash_kills_what_leaves_its_process_group_with_setsid() {
    let w = bash_ws();
    let t = Instant::now();
    let r = w
        .call(
            "bash",
            json!({"command": "setsid sleep 100 & echo $! > pid.txt; \
                   setsid bash -c 'sleep 100 & echo $! > pid2.txt; wait' & \
                   until [ -s pid2.txt ]; do sleep 0.01; done; echo bye"}),
        )
        .await
        .unwrap();
    assert_eq!(r, "exit code: 0\n[stdout]\nbye");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    wait_dead(read_pid(&w));
    let pid2 = std::fs::read_to_string(w.root.join("pid2.txt")).unwrap();
    wait_dead(pid2.trim().parse().unwrap());
}
