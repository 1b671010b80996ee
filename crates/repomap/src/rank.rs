//! Ranking definitions by how much the rest of the code leans on them, as Aider's map does: files
//! are nodes, a file that uses a name has an edge to each file defining it (weight √uses, split
//! between the definers), a PageRank runs over that graph (personalised to the focus files when
//! the caller names some), and each definition gets the rank that flows along its name's edges.
//!
//! Weights say how telling a name is: a long compound name (`parse_with_schema`, `ToolOutput`)
//! ×10, a private-looking `_name` ×0.1, a name defined in more than five files (`new`, `run`) ×0.1.
//! A file's own uses of its names carry no weight: being referenced means by other files.
//! Definitions nobody else uses rank by their file's rank, far below any that are used.

use std::collections::HashMap;

use crate::tags::FileTags;

/// PageRank's damping factor, the usual one.
const DAMPING: f64 = 0.85;
/// Iterations at most; the ranks converge well before on source trees.
const ITERATIONS: usize = 50;

/// One ranked definition: the file's index, the definition's index in it, its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranked {
    /// Index into the files given to [`rank`].
    pub file: usize,
    /// Index into that file's definitions.
    pub def: usize,
    /// Its score (higher first).
    pub score: f64,
    /// How many other files use its name.
    pub referenced_by: u32,
}

/// Every definition of `files`, best first (ties by file order, then line). `focus` are indices
/// of files the caller works on: the ranking is personalised to them.
pub fn rank(files: &[&FileTags], focus: &[usize]) -> Vec<Ranked> {
    let n = files.len();
    if n == 0 {
        return Vec::new();
    }
    let mut definers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (index, tags) in files.iter().enumerate() {
        for def in &tags.defs {
            let list = definers.entry(def.name.as_str()).or_default();
            if list.last() != Some(&index) {
                list.push(index);
            }
        }
    }
    // Edges from each referencing file: (definer, name, weight).
    let mut edges: Vec<Vec<(usize, &str, f64)>> = vec![Vec::new(); n];
    let mut users: HashMap<(usize, &str), u32> = HashMap::new();
    for (from, tags) in files.iter().enumerate() {
        for (name, uses) in &tags.refs {
            let Some(defined_in) = definers.get(name.as_str()) else { continue };
            let others = defined_in.iter().filter(|&&d| d != from).count();
            if others == 0 {
                continue;
            }
            let weight =
                name_weight(name, defined_in.len()) * f64::from(*uses).sqrt() / others as f64;
            for &to in defined_in.iter().filter(|&&d| d != from) {
                edges[from].push((to, name.as_str(), weight));
                *users.entry((to, name.as_str())).or_default() += 1;
            }
        }
    }
    let out: Vec<f64> = edges.iter().map(|e| e.iter().map(|(_, _, w)| w).sum()).collect();
    let personal: Vec<f64> = if focus.iter().any(|&f| f < n) {
        let count = focus.iter().filter(|&&f| f < n).count() as f64;
        (0..n).map(|i| if focus.contains(&i) { 1.0 / count } else { 0.0 }).collect()
    } else {
        vec![1.0 / n as f64; n]
    };
    let mut ranks = personal.clone();
    for _ in 0..ITERATIONS {
        let dangling: f64 = (0..n).filter(|&i| out[i] == 0.0).map(|i| ranks[i]).sum();
        let mut next: Vec<f64> =
            personal.iter().map(|p| (1.0 - DAMPING) * p + DAMPING * dangling * p).collect();
        for (from, list) in edges.iter().enumerate() {
            if out[from] == 0.0 {
                continue;
            }
            let share = DAMPING * ranks[from] / out[from];
            for &(to, _, weight) in list {
                next[to] += share * weight;
            }
        }
        let change: f64 = next.iter().zip(&ranks).map(|(a, b)| (a - b).abs()).sum();
        ranks = next;
        if change < 1e-9 {
            break;
        }
    }
    let mut flowing: HashMap<(usize, &str), f64> = HashMap::new();
    for (from, list) in edges.iter().enumerate() {
        for &(to, name, weight) in list {
            *flowing.entry((to, name)).or_default() += ranks[from] * weight / out[from];
        }
    }
    let mut ranked = Vec::new();
    for (file, tags) in files.iter().enumerate() {
        let unused = ranks[file] * 1e-6 / (tags.defs.len().max(1) as f64);
        for (def, d) in tags.defs.iter().enumerate() {
            let key = (file, d.name.as_str());
            let score = flowing.get(&key).copied().unwrap_or(unused);
            let referenced_by = users.get(&key).copied().unwrap_or(0);
            ranked.push(Ranked { file, def, score, referenced_by });
        }
    }
    ranked.sort_by(|a, b| {
        b.score.total_cmp(&a.score).then(a.file.cmp(&b.file)).then(a.def.cmp(&b.def))
    });
    ranked
}

/// How much one use of `name` tells, given how many files define it.
fn name_weight(name: &str, defined_in: usize) -> f64 {
    let mut weight = 1.0;
    let bare = name.trim_start_matches('_');
    let compound = bare.contains('_')
        || bare.contains('-')
        || bare.chars().skip(1).any(char::is_uppercase) && bare.chars().any(char::is_lowercase);
    if compound && bare.len() >= 8 {
        weight *= 10.0;
    }
    if name.starts_with('_') {
        weight *= 0.1;
    }
    if defined_in > 5 {
        weight *= 0.1;
    }
    weight
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tags::Def;

    fn file(defs: &[&str], refs: &[(&str, u32)]) -> FileTags {
        FileTags {
            defs: defs
                .iter()
                .enumerate()
                .map(|(i, name)| Def {
                    name: (*name).to_owned(),
                    kind: "function".into(),
                    line: i as u32 + 1,
                    signature: format!("fn {name}()"),
                })
                .collect(),
            refs: refs.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect(),
        }
    }

    #[test]
    fn the_most_used_definition_comes_first() {
        let core = file(&["Session", "unused_helper"], &[]);
        let a = file(&["alpha"], &[("Session", 3)]);
        let b = file(&["beta"], &[("Session", 1), ("alpha", 1)]);
        let c = file(&["gamma"], &[("Session", 2)]);
        let files = [&core, &a, &b, &c];
        let ranked = rank(&files, &[]);
        assert_eq!((ranked[0].file, ranked[0].def), (0, 0), "{ranked:?}");
        assert_eq!(ranked[0].referenced_by, 3);
        assert_eq!((ranked[1].file, ranked[1].def), (1, 0), "alpha is used once: {ranked:?}");
        let helper = ranked.iter().position(|r| r.file == 0 && r.def == 1).unwrap();
        assert!(helper >= 2, "an unused definition ranks below the used ones: {ranked:?}");
        assert_eq!(ranked.len(), 5);
    }

    #[test]
    fn own_uses_do_not_count_and_focus_personalises() {
        let selfish = file(&["Busy"], &[("Busy", 50)]);
        let lib = file(&["Shared"], &[]);
        let user = file(&["main"], &[("Shared", 1)]);
        let ranked = rank(&[&selfish, &lib, &user], &[]);
        assert_eq!((ranked[0].file, ranked[0].def), (1, 0), "{ranked:?}");
        // Focused on a file that uses only Busy, Busy's definer gains.
        let fan = file(&["fan"], &[("Busy", 1)]);
        let ranked = rank(&[&selfish, &lib, &user, &fan], &[3]);
        assert_eq!((ranked[0].file, ranked[0].def), (0, 0), "{ranked:?}");
    }

    #[test]
    fn common_names_weigh_less_than_telling_ones() {
        assert!(name_weight("parse_with_schema", 1) > name_weight("parse", 1));
        assert!(name_weight("ToolOutput", 1) > name_weight("Tool", 1));
        assert!(name_weight("new", 8) < name_weight("new", 1));
        assert!(name_weight("_private", 1) < name_weight("private", 1));
        assert!(rank(&[], &[]).is_empty());
    }
}
