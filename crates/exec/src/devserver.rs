//! Recognising a foreground dev-server command (`npm run dev`, `vite`, `next dev`, …), which bash
//! short-circuits into a managed daemon instead of blocking until its timeout.
//!
//! Flow: split the command line into shell words and operators (quotes respected, redirections
//! dropped), take the last command that runs in the foreground (after `&&`, `;`, `||`, the last
//! stage of a pipeline), skip leading `VAR=value` assignments and wrappers (`env`, `exec`, `npx`,
//! `pnpm exec`, …), and match what is left against a table of servers. A command whose last part
//! runs in the background (`… &`) or whose pipeline ends in another program is not a dev server.
//!
//! `npm start` (and `yarn start`, …) counts: in web projects it almost always starts a server
//! (react-scripts, express, `ng serve`). When it is a one-shot script after all, the daemon exits
//! before it is ready and the caller gets the exit code and the output, which is what bash would
//! have shown.

/// Script names that run a server under a package manager (`npm run <name>`, `pnpm <name>`).
const SERVER_SCRIPTS: &[&str] = &["dev", "start", "serve", "develop", "preview"];

/// Programs that are servers: `(program, subcommands that serve, serves without a subcommand)`.
/// A subcommand is the first word that is not an option.
const SERVERS: &[(&str, &[&str], bool)] = &[
    ("vite", &["dev", "serve", "preview"], true),
    ("next", &["dev", "start"], false),
    ("nuxt", &["dev", "preview", "start"], false),
    ("nuxi", &["dev", "preview"], false),
    ("astro", &["dev", "preview"], false),
    ("remix", &["dev"], false),
    ("react-router", &["dev"], false),
    ("react-scripts", &["start"], false),
    ("ng", &["serve", "s"], false),
    ("vue-cli-service", &["serve"], false),
    ("webpack", &["serve", "s"], false),
    ("webpack-dev-server", &[], true),
    ("rsbuild", &["dev", "preview"], true),
    ("gatsby", &["develop"], false),
    ("svelte-kit", &["dev"], false),
    ("parcel", &["serve"], true),
    ("expo", &["start"], false),
    ("wrangler", &["dev"], false),
    ("vercel", &["dev"], false),
    ("netlify", &["dev"], false),
    ("ember", &["serve", "s"], false),
    ("hugo", &["server", "serve"], false),
    ("jekyll", &["serve", "s"], false),
    ("uvicorn", &[], true),
    ("flask", &["run"], false),
    ("rails", &["server", "s"], false),
];

/// True when `command` is a dev server that would run in the foreground forever.
pub fn is_dev_server(command: &str) -> bool {
    let Some(words) = foreground_command(command) else { return false };
    serves(&words)
}

/// The words of the command that the shell would leave running in the foreground last, or `None`
/// when the line ends in the background or in a pipeline.
fn foreground_command(command: &str) -> Option<Vec<String>> {
    let tokens = tokenize(command)?;
    let mut commands: Vec<(Vec<String>, Option<Op>)> = Vec::new();
    let mut words = Vec::new();
    for token in tokens {
        match token {
            Token::Word(w) => words.push(w),
            Token::Op(op) => commands.push((std::mem::take(&mut words), Some(op))),
        }
    }
    commands.push((words, None));
    let mut nonempty = commands.into_iter().filter(|(w, _)| !w.is_empty());
    let (words, after) = nonempty.next_back()?;
    match after {
        // `… &`: already in the background; `… | other`: the pipeline ends in something else.
        Some(Op::Background | Op::Pipe) => None,
        _ => Some(words),
    }
}

/// True when the simple command `words` starts a server.
fn serves(words: &[String]) -> bool {
    let mut rest = skip_assignments(words);
    // Wrappers that run the next word as the program.
    loop {
        match rest.first().map(|w| program_name(w)) {
            Some("env") => rest = skip_options(skip_assignments(&rest[1..])),
            Some("exec" | "command") => rest = &rest[1..],
            Some("npx" | "pnpx" | "bunx") => rest = skip_options(&rest[1..]),
            Some("npm" | "pnpm" | "yarn")
                if matches!(rest.get(1).map(String::as_str), Some("exec" | "dlx")) =>
            {
                rest = skip_options(&rest[2..]);
            }
            Some("python" | "python3") => return python_serves(&rest[1..]),
            _ => break,
        }
    }
    let Some(program) = rest.first().map(|w| program_name(w)) else { return false };
    match program {
        "npm" => match words_after_options(&rest[1..]) {
            [run, script, ..] if matches!(run.as_str(), "run" | "run-script") => {
                is_server_script(script)
            }
            [start, ..] => start == "start",
            [] => false,
        },
        "pnpm" | "yarn" | "bun" => {
            let args = words_after_options(&rest[1..]);
            match args {
                [run, script, ..] if run == "run" => {
                    is_server_script(script) || server_program(&args[1..])
                }
                // `pnpm dev`, or a package's bin: `yarn vite`.
                [script, ..] => is_server_script(script) || server_program(args),
                [] => false,
            }
        }
        _ => server_program(rest),
    }
}

/// `program args…` against [`SERVERS`].
fn server_program(words: &[String]) -> bool {
    let Some(program) = words.first().map(|w| program_name(w)) else { return false };
    let Some((_, subcommands, bare)) = SERVERS.iter().find(|(name, _, _)| *name == program) else {
        return false;
    };
    // The subcommand is the first word that is not an option, an option's value, a port number
    // or a path: `vite --port 4000 ./web` serves; `vite build` does not.
    let mut args = words_after_options(&words[1..]);
    while let [word, rest @ ..] = args {
        if word.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
            return subcommands.contains(&word.as_str());
        }
        args = words_after_options(rest);
    }
    *bare
}

/// `python -m http.server`, `python manage.py runserver`, `python -m flask run`, `python -m uvicorn`.
fn python_serves(args: &[String]) -> bool {
    match words_after_options_keep_m(args) {
        [m, module, rest @ ..] if m == "-m" => match module.as_str() {
            "http.server" | "uvicorn" => true,
            "flask" => rest.first().is_some_and(|w| w == "run"),
            _ => false,
        },
        [script, sub, ..] => script.ends_with("manage.py") && sub == "runserver",
        _ => false,
    }
}

/// Python's options other than `-m`, which names the module.
fn words_after_options_keep_m(args: &[String]) -> &[String] {
    let start = args.iter().position(|w| w == "-m" || !w.starts_with('-')).unwrap_or(args.len());
    &args[start..]
}

fn is_server_script(script: &str) -> bool {
    SERVER_SCRIPTS.contains(&script) || script.starts_with("dev:")
}

/// `./node_modules/.bin/vite` → `vite`.
fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn skip_assignments(words: &[String]) -> &[String] {
    let start = words.iter().position(|w| !is_assignment(w)).unwrap_or(words.len());
    &words[start..]
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Options of package managers and wrappers that take a value as the next word.
const OPTIONS_WITH_VALUE: &[&str] = &[
    "--filter",
    "-F",
    "--prefix",
    "-C",
    "--cwd",
    "--dir",
    "-w",
    "--workspace",
    "-p",
    "--package",
    "--port",
    "--host",
    "--hostname",
    "-H",
    "--mode",
    "--config",
    "-c",
    "--base",
];

fn skip_options(words: &[String]) -> &[String] {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        if !w.starts_with('-') {
            break;
        }
        i += if OPTIONS_WITH_VALUE.contains(&w.as_str()) { 2 } else { 1 };
    }
    &words[i.min(words.len())..]
}

fn words_after_options(words: &[String]) -> &[String] {
    skip_options(words)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `&&`, `||`, `;`, newline, `(`, `)`: the next command runs after (or instead of) this one.
    List,
    /// `&`
    Background,
    /// `|`
    Pipe,
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Op(Op),
}

/// Shell words and control operators; quotes and backslashes are honoured, redirections and their
/// targets dropped, comments ignored. `None` when a quote is left open.
fn tokenize(line: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut skip_next_word = false;
    let mut chars = line.chars().peekable();
    let finish = |word: &mut String, in_word: &mut bool, skip: &mut bool, tokens: &mut Vec<_>| {
        if *in_word {
            if *skip {
                *skip = false;
            } else {
                tokens.push(Token::Word(std::mem::take(word)));
            }
        }
        word.clear();
        *in_word = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(c) => word.push(c),
                }
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        tokens.push(Token::Op(Op::List));
                        break;
                    }
                }
            }
            ' ' | '\t' => finish(&mut word, &mut in_word, &mut skip_next_word, &mut tokens),
            '>' | '<' => {
                // `2>&1`, `>file`, `>> file`, `<<<`: the fd number before it is not a word.
                if in_word && word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                } else {
                    finish(&mut word, &mut in_word, &mut skip_next_word, &mut tokens);
                }
                redirection(&mut chars, &mut skip_next_word);
            }
            '&' | '|' | ';' | '\n' | '(' | ')' => {
                finish(&mut word, &mut in_word, &mut skip_next_word, &mut tokens);
                let op = match (c, chars.peek()) {
                    ('&', Some('&')) | ('|', Some('|')) => {
                        chars.next();
                        Op::List
                    }
                    ('&', Some('>')) => {
                        // `&>file`: stdout and stderr to a file.
                        chars.next();
                        redirection(&mut chars, &mut skip_next_word);
                        continue;
                    }
                    ('|', Some('&')) => {
                        chars.next();
                        Op::Pipe
                    }
                    ('&', _) => Op::Background,
                    ('|', _) => Op::Pipe,
                    (';', Some(';')) => {
                        chars.next();
                        Op::List
                    }
                    _ => Op::List,
                };
                tokens.push(Token::Op(op));
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    finish(&mut word, &mut in_word, &mut skip_next_word, &mut tokens);
    Some(tokens)
}

/// Consume the rest of a redirection operator after its first `>`/`<`; a duplication (`>&1`) is
/// complete, anything else takes the next word as its target.
fn redirection(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, skip_next_word: &mut bool) {
    while chars.next_if(|c| matches!(c, '>' | '<' | '|')).is_some() {}
    if chars.next_if_eq(&'&').is_some() {
        while chars.next_if(|c| c.is_ascii_digit() || *c == '-').is_some() {}
        return;
    }
    *skip_next_word = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_servers_are_recognised() {
        let yes = [
            "npm run dev",
            "npm run dev -- --port 3000",
            "npm start",
            "npm run start",
            "npm run dev:web",
            "npm --prefix web run dev",
            "pnpm dev",
            "pnpm run dev",
            "pnpm --filter web dev",
            "pnpm exec vite",
            "yarn dev",
            "yarn start",
            "yarn vite",
            "bun dev",
            "bun run dev",
            "bunx vite",
            "vite",
            "vite --port 4000 --host",
            "vite --host localhost --port 4000",
            "next dev -H 0.0.0.0 -p 3000",
            "vite dev",
            "vite preview",
            "vite ./web",
            "npx vite",
            "npx --yes vite --open",
            "./node_modules/.bin/vite",
            "next dev",
            "npx next dev -p 3001",
            "nuxt dev",
            "astro dev",
            "remix dev",
            "ng serve",
            "webpack serve --mode development",
            "PORT=3000 npm run dev",
            "PORT=3000 HOST=0.0.0.0 pnpm dev",
            "env PORT=3000 npm run dev",
            "exec npm run dev",
            "cd web && npm run dev",
            "cd web; npm install && npm run dev",
            "(cd web && npm run dev)",
            "npm install && npm run dev",
            "npm run dev 2>&1",
            "npm run dev > dev.log 2>&1",
            "npm run dev &> dev.log",
            "yes | npx vite",
            "npm run dev # start the server",
            "python3 -m http.server 8000",
            "python manage.py runserver",
            "uvicorn app:app --reload",
            "flask run",
            "'npm' \"run\" dev",
        ];
        for command in yes {
            assert!(is_dev_server(command), "should be a dev server: {command}");
        }
    }

    #[test]
    fn other_commands_are_not() {
        let no = [
            "",
            "npm run build",
            "npm test",
            "npm run test",
            "npm install",
            "npm run lint",
            "pnpm build",
            "yarn",
            "yarn install",
            "bun run build",
            "bun run server.ts",
            "vite build",
            "vite --mode staging build",
            "npx vite build",
            "vite optimize",
            "next build",
            "next lint",
            "nuxt generate",
            "astro build",
            "echo npm run dev",
            "echo 'npm run dev'",
            "echo \"npm run dev\"",
            "npm run dev &",
            "npm run dev&",
            "PORT=3000 npm run dev &",
            "(npm run dev &)",
            "nohup npm run dev > log 2>&1 &",
            "npm run dev | tee dev.log",
            "npm run dev |& cat",
            "npm run dev 2>&1 | grep ready",
            "npm run dev && echo done",
            "npm run dev; echo stopped",
            "timeout 10 npm run dev",
            "grep dev package.json",
            "cat vite.config.ts",
            "git commit -m 'npm run dev'",
            "npm run 'dev",
            "python3 script.py",
            "python3 -m pytest",
            "python manage.py migrate",
            "DEV=1 make",
        ];
        for command in no {
            assert!(!is_dev_server(command), "should not be a dev server: {command}");
        }
    }

    #[test]
    fn tokenizer_drops_redirections_and_splits_operators() {
        let tokens = tokenize("A=1 npm run dev 2>&1 >log && x|y &").unwrap();
        let words = |ws: &[&str]| ws.iter().map(|w| Token::Word((*w).into())).collect::<Vec<_>>();
        let mut expected = words(&["A=1", "npm", "run", "dev"]);
        expected.push(Token::Op(Op::List));
        expected.extend(words(&["x"]));
        expected.push(Token::Op(Op::Pipe));
        expected.extend(words(&["y"]));
        expected.push(Token::Op(Op::Background));
        assert_eq!(tokens, expected);
        assert_eq!(tokenize("echo 'open"), None);
    }
}
