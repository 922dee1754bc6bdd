//! When the material starts no SGLang server or router: the commands it does run that look
//! like they might (an interpreter, a container, a launcher), each with why it does not
//! qualify, so that "nothing found" says what was read and what to change.

use super::launch::is_python;
use super::shell::{Lexer, Vars};
use crate::read::source::{SourceFile, SrcMap};
use crate::read::yaml::{self, Node};

/// A command that was read and starts no SGLang server or router.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Seen {
    /// Index of the file.
    pub file: usize,
    /// Offset of the command's first word.
    pub at: usize,
    /// Its first words, as read.
    pub command: String,
    /// Why it is not read as a launch.
    pub why: String,
}

/// The most words of a command a [`Seen`] shows.
const SHOWN_WORDS: usize = 4;

/// The commands of `files` that look like a program start and are no SGLang launch, in order.
pub fn seen(files: &[SourceFile], config_files: &[usize]) -> Vec<Seen> {
    let mut out = Vec::new();
    for (idx, file) in files.iter().enumerate().filter(|(k, _)| !config_files.contains(k)) {
        match super::kind_of(&file.name, &file.text) {
            super::Kind::Shell => shell(&file.text, &SrcMap::Offset(0), idx, &mut out, 0),
            super::Kind::Yaml => {
                if let Ok(docs) = yaml::parse(&file.text) {
                    for d in &docs {
                        node(d, idx, &mut out);
                    }
                }
            }
        }
    }
    out
}

/// The commands of shell text.
fn shell(text: &str, map: &SrcMap, file: usize, out: &mut Vec<Seen>, depth: usize) {
    if depth > 3 {
        return;
    }
    let mut lx = Lexer::new(text, map, file, depth > 0);
    let mut vars = Vars::default();
    while lx.read_command(&vars) {
        let words: Vec<String> = (0..lx.len()).map(|i| lx.text(i).to_owned()).collect();
        // Assignments alone set variables for the commands after them.
        if !words.is_empty() && (0..lx.len()).all(|i| lx.eq(i).is_some()) {
            for i in 0..lx.len() {
                let (t, eq) = (lx.text(i), lx.eq(i).unwrap_or(0));
                let value = (!lx.is_symbolic(i)).then(|| t[eq + 1..].to_owned());
                vars.set(&t[..eq], super::shell::VarValue { text: value, map: Vec::new() });
            }
            continue;
        }
        let at = if lx.is_empty() { 0 } else { lx.start(0) };
        let scripts: Vec<usize> =
            (0..lx.len()).filter(|&i| lx.text(i).bytes().any(|b| b.is_ascii_whitespace())).collect();
        let nested: Vec<_> = scripts.into_iter().map(|i| lx.take_word(i)).collect();
        let before = out.len();
        for w in &nested {
            if let Some(m) = &w.map {
                shell(&w.text, m, w.file, out, depth + 1);
            }
        }
        if out.len() == before {
            if let Some(why) = why_not(&words.iter().map(String::as_str).collect::<Vec<_>>()) {
                out.push(Seen { file, at, command: shown(&words), why });
            }
        }
    }
}

/// The container commands of YAML documents: `command`/`args` (Kubernetes),
/// `entrypoint`/`command` (compose), each a list of words or one shell string.
fn node(n: &Node<'_>, file: usize, out: &mut Vec<Seen>) {
    match n {
        Node::Map(m) => {
            let keys = ["entrypoint", "command", "args"];
            let parts: Vec<&Node<'_>> = keys.iter().filter_map(|k| n.get(k)).collect();
            let mut words: Vec<String> = Vec::new();
            let mut at = None;
            for p in &parts {
                match p {
                    Node::Seq(s) => {
                        for item in &s.items {
                            if let Node::Scalar(sc) = item {
                                at.get_or_insert(sc.start);
                                words.push(sc.text.to_string());
                            }
                        }
                    }
                    Node::Scalar(sc) => {
                        at.get_or_insert(sc.start);
                        words.extend(super::shell::words(&sc.text));
                    }
                    _ => {}
                }
            }
            let before = out.len();
            // A shell string among them (`bash -c "..."`) is read as a script.
            for p in &parts {
                let scalars: Vec<_> = match p {
                    Node::Seq(s) => s.items.iter().filter_map(Node::scalar).collect(),
                    Node::Scalar(sc) => vec![sc],
                    _ => Vec::new(),
                };
                for sc in scalars.into_iter().filter(|sc| sc.text.contains(char::is_whitespace)) {
                    shell(&sc.text, &sc.map, file, out, 1);
                }
            }
            if out.len() == before {
                if let (Some(at), Some(why)) = (at, why_not(&words.iter().map(String::as_str).collect::<Vec<_>>())) {
                    out.push(Seen { file, at, command: shown(&words), why });
                }
            }
            for (k, v) in &m.entries {
                if !keys.contains(&&*k.text) {
                    node(v, file, out);
                }
            }
        }
        Node::Seq(s) => s.items.iter().for_each(|i| node(i, file, out)),
        _ => {}
    }
}

/// The first words of a command, for the message.
fn shown<S: AsRef<str>>(words: &[S]) -> String {
    let mut s: Vec<&str> = words.iter().take(SHOWN_WORDS).map(AsRef::as_ref).collect();
    if words.len() > SHOWN_WORDS {
        s.push("...");
    }
    s.join(" ")
}

fn basename(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// What SGLang's launchers are, for the messages.
const KNOWN: &str = "python -m sglang.launch_server, sglang serve, python -m dynamo.sglang, \
                     python -m sglang_router.launch_router, smg launch";

/// Why the command `words` starts no SGLang server or router, when it starts a program that
/// might have been meant to: an interpreter, a launcher, a container, anything naming SGLang or
/// Dynamo. `None` for the rest (`echo`, `mkdir`, ...).
fn why_not(words: &[&str]) -> Option<String> {
    // The program: the first word after assignments that is a launcher or an interpreter.
    let first = words.iter().position(|w| !is_assignment(w))?;
    let words = &words[first..];
    if NOT_LAUNCHERS.contains(&basename(words[0])) {
        return None;
    }
    for (i, w) in words.iter().enumerate() {
        let name = basename(w);
        if is_python(w) {
            return Some(python(&words[i + 1..], name));
        }
        match name {
            "dynamo-run" => return Some(dynamo_run(&words[i + 1..])),
            "dynamo" if words.get(i + 1) == Some(&"run") => return Some(dynamo_run(&words[i + 2..])),
            "sglang" => {
                let sub = words.get(i + 1).copied().unwrap_or("");
                return Some(format!("`sglang {sub}` is not SGLang's server subcommand (`sglang serve`)"));
            }
            "smg" | "amg" | "sglang-router" => {
                return Some(format!(
                    "`{name}` starts the router with `{name} launch` and servers with a router with `{name} server`"
                ))
            }
            "torchrun" | "accelerate" | "deepspeed" | "mpirun" => {
                return Some(format!(
                    "`{name}` starts no SGLang server itself, and no known SGLang entry point ({KNOWN}) follows it"
                ))
            }
            "docker" | "podman" | "nerdctl" if matches!(words.get(i + 1), Some(&"run") | Some(&"create")) => {
                return Some(format!(
                    "`{name} run` with no known SGLang entry point ({KNOWN}) after its image: the image's own \
                     entrypoint is not in this file; write the command after the image, or with --entrypoint"
                ))
            }
            _ => {}
        }
    }
    let w = words[0];
    let names = |s: &str| s.to_ascii_lowercase().contains("sglang") || s.to_ascii_lowercase().contains("dynamo");
    names(w).then(|| format!("`{}` is not a known SGLang entry point ({KNOWN})", basename(w)))
}

/// Programs whose arguments may name SGLang without starting it (`pip install sglang`).
const NOT_LAUNCHERS: &[&str] = &[
    "pip",
    "pip3",
    "uv",
    "conda",
    "git",
    "echo",
    "printf",
    "cat",
    "cd",
    "mkdir",
    "rm",
    "cp",
    "mv",
    "ln",
    "ls",
    "wget",
    "curl",
    "huggingface-cli",
    "hf",
    "apt",
    "apt-get",
    "kill",
    "pkill",
    "wait",
    "sleep",
    "source",
    ".",
    "tee",
    "grep",
    "sed",
    "awk",
    "chmod",
    "test",
    "[",
    "[[",
    "trap",
    "set",
    "cleanup",
];

fn is_assignment(w: &str) -> bool {
    let n = w.bytes().take_while(|&b| b.is_ascii_alphanumeric() || b == b'_').count();
    n > 0 && w.as_bytes().get(n) == Some(&b'=') && !w.as_bytes()[0].is_ascii_digit()
}

/// Why a `python ARGS` command is no launch.
fn python(args: &[&str], interpreter: &str) -> String {
    let mut j = 0;
    while let Some(w) = args.get(j) {
        match *w {
            "-m" | "-c" => break,
            "-X" | "-W" => j += 2,
            s if s.starts_with('-') && s.len() > 1 => j += 1,
            _ => break,
        }
    }
    match (args.get(j).copied(), args.get(j + 1).copied()) {
        (Some("-m"), Some(m)) => format!(
            "module `{m}` starts no SGLang server or router (known: sglang.launch_server, dynamo.sglang, \
             dynamo.sglang.worker, dynamo.sglang.decode_worker, sglang_router.launch_router, \
             sglang_router.launch_server)"
        ),
        (Some("-c"), _) => format!("`{interpreter} -c` runs inline Python, which the linter does not read"),
        (Some(script), _) if basename(script).ends_with(".py") => {
            let name = basename(script);
            if matches!(name, "worker.py" | "decode_worker.py" | "worker_inc.py" | "decode_worker_inc.py") {
                format!(
                    "`{script}` is read as Dynamo's SGLang worker only from a path naming sglang or with \
                     --skip-tokenizer-init, which that worker required (vLLM's and TensorRT-LLM's examples \
                     have a {name} too)"
                )
            } else {
                format!("`{script}` is a script of its own, not a known SGLang entry point ({KNOWN})")
            }
        }
        _ => format!("`{interpreter}` with no module or script of SGLang ({KNOWN})"),
    }
}

/// Why a `dynamo-run` (`dynamo run`) command is not read.
fn dynamo_run(args: &[&str]) -> String {
    let out = args.iter().find_map(|a| a.strip_prefix("out=")).unwrap_or("");
    if out == "sglang" {
        "`dynamo-run out=sglang` takes Dynamo's own options (--tensor-parallel-size, --extra-engine-args \
         JSON...), not SGLang's server arguments: not read; `python -m dynamo.sglang` takes SGLang's"
            .to_owned()
    } else {
        format!("`dynamo-run` with out={out} starts no SGLang server")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen_in(name: &str, text: &str) -> Vec<(u32, String, String)> {
        let files = [SourceFile::new(name.to_owned(), text.to_owned())];
        seen(&files, &[]).into_iter().map(|s| (files[0].position(s.at).0, s.command, s.why)).collect()
    }

    #[test]
    fn commands_that_look_like_launches_say_why_they_are_none() {
        let s = seen_in(
            "run.sh",
            "set -e\nMODEL=x\necho start\npython3 serve.py --model $MODEL\n\
             python3 -m dynamo.frontend --http-port 8000 &\n\
             dynamo-run in=http out=sglang --model-path m\n\
             python3 components/worker.py --model m --worker-type prefill\n\
             docker run --gpus all lmsysorg/sglang:latest\n\
             bash -c 'sglang bench --x 1'\npip install sglang\n",
        );
        let lines: Vec<u32> = s.iter().map(|(l, _, _)| *l).collect();
        assert_eq!(lines, [4, 5, 6, 7, 8, 9], "{s:#?}");
        assert_eq!(s[0].1, "python3 serve.py --model x");
        assert!(s[0].2.contains("`serve.py` is a script of its own"), "{}", s[0].2);
        assert!(s[1].2.starts_with("module `dynamo.frontend`"), "{}", s[1].2);
        assert!(s[2].2.contains("not SGLang's server arguments"), "{}", s[2].2);
        assert!(s[3].2.contains("--skip-tokenizer-init"), "{}", s[3].2);
        assert!(s[4].2.starts_with("`docker run` with no known SGLang entry point"), "{}", s[4].2);
        assert!(s[5].2.contains("`sglang bench`"), "{}", s[5].2);
    }

    #[test]
    fn manifests_commands_are_seen_with_their_place() {
        let text = "spec:\n  containers:\n  - name: w\n    command: [\"python3\"]\n    args: [\"server.py\", \"--port\", \"1\"]\n";
        let s = seen_in("w.yaml", text);
        assert_eq!(s.len(), 1, "{s:#?}");
        assert_eq!((s[0].0, s[0].1.as_str()), (4, "python3 server.py --port 1"));
    }
}
