//! The file graph of one crate: which source file uses an item of which other file.
//!
//! Flow: parse the crate root (`lib.rs` or `main.rs`) with `syn`, follow `mod x;` to files (and
//! `mod x { … }` inline), note each module's items and `use` bindings; then resolve every path a
//! module's code names — `use` trees, `crate::…`, `super::…`, `self::…`, paths through a child
//! module or an imported name, and the same inside macro bodies — to the file that DEFINES the
//! item, following re-exports (`pub use x::Y`) and glob imports. A path that stops at a module
//! (`use super::*`, `use crate::tools`) depends on that module's file. Test code (`#[cfg(test)]`)
//! is left out, as `cargo modules` does by default.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// One module: a file, or an inline `mod x { … }` in a file.
struct Module {
    file: usize,
    parent: Option<usize>,
    children: HashMap<String, usize>,
    /// Names of the items defined here.
    items: BTreeSet<String>,
    /// `use` bindings: name → absolute path (`None`: outside this crate).
    uses: HashMap<String, Option<Vec<String>>>,
    /// Absolute paths of glob imports.
    globs: Vec<Vec<String>>,
    /// Every path this module's code names, as written.
    refs: Vec<Vec<String>>,
}

/// A crate's files and the edges between them.
pub struct Graph {
    /// Files, relative to the `src` folder.
    pub files: Vec<String>,
    /// file → the files it depends on.
    pub edges: BTreeMap<usize, BTreeSet<usize>>,
}

/// The graph of the crate whose root file is `root` (e.g. `src/lib.rs`).
pub fn load(root: &Path) -> Result<Graph, String> {
    let src = root.parent().ok_or("the root has no folder")?.to_path_buf();
    let mut loader = Loader { src, files: Vec::new(), modules: Vec::new() };
    let dir = loader.src.clone();
    loader.file(root, None, &dir)?;
    Ok(loader.graph())
}

struct Loader {
    src: PathBuf,
    files: Vec<String>,
    modules: Vec<Module>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let tokens = a.meta.require_list().map(|l| l.tokens.to_string()).unwrap_or_default();
            tokens.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "test")
                && !tokens.contains("not")
        }
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

impl Loader {
    /// Load the file `path` as a module under `parent`; its child files are found in `dir`.
    fn file(&mut self, path: &Path, parent: Option<usize>, dir: &Path) -> Result<usize, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path.strip_prefix(&self.src).unwrap_or(path).display().to_string();
        self.files.push(name);
        let file = self.files.len() - 1;
        self.module(&ast.items, file, parent, dir)
    }

    fn module(
        &mut self,
        items: &[syn::Item],
        file: usize,
        parent: Option<usize>,
        dir: &Path,
    ) -> Result<usize, String> {
        self.modules.push(Module {
            file,
            parent,
            children: HashMap::new(),
            items: BTreeSet::new(),
            uses: HashMap::new(),
            globs: Vec::new(),
            refs: Vec::new(),
        });
        let me = self.modules.len() - 1;
        let mut collect = Collect { refs: Vec::new() };
        for item in items {
            if let syn::Item::Mod(m) = item {
                if is_cfg_test(&m.attrs) {
                    continue;
                }
                let name = m.ident.to_string();
                let child = match &m.content {
                    Some((_, inner)) => self.module(inner, file, Some(me), &dir.join(&name))?,
                    None => {
                        let (path, child_dir) = match path_attr(&m.attrs) {
                            Some(p) => {
                                let p = dir.join(p);
                                let d = p.with_extension("");
                                (p, d)
                            }
                            None if dir.join(format!("{name}.rs")).is_file() => {
                                (dir.join(format!("{name}.rs")), dir.join(&name))
                            }
                            None => (dir.join(&name).join("mod.rs"), dir.join(&name)),
                        };
                        self.file(&path, Some(me), &child_dir)?
                    }
                };
                self.modules[me].children.insert(name, child);
                continue;
            }
            if item_is_cfg_test(item) {
                continue;
            }
            match item {
                syn::Item::Use(u) => {
                    let mut flat = Vec::new();
                    flatten(&u.tree, &mut Vec::new(), &mut flat);
                    for (path, binding) in flat {
                        collect.refs.push(path.clone());
                        match binding {
                            Binding::Name(name) => {
                                self.modules[me].uses.insert(name, Some(path));
                            }
                            Binding::Glob => self.modules[me].globs.push(path),
                        }
                    }
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.modules[me].items.insert(name);
                    }
                    collect.visit_item(other);
                }
            }
        }
        self.modules[me].refs = collect.refs;
        Ok(me)
    }

    /// The absolute module path of `module`.
    fn abs(&self, module: usize) -> Vec<String> {
        let mut names = Vec::new();
        let mut at = module;
        while let Some(parent) = self.modules[at].parent {
            let name = self.modules[parent].children.iter().find(|(_, c)| **c == at);
            names.push(name.map(|(n, _)| n.clone()).unwrap_or_default());
            at = parent;
        }
        names.reverse();
        names
    }

    /// `path` as written in `module`, made absolute (from the crate root); `None` when it leaves
    /// the crate or names something local to the module.
    fn absolute(&self, module: usize, path: &[String]) -> Option<Vec<String>> {
        let first = path.first()?;
        let (mut base, rest) = match first.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (self.abs(module), &path[1..]),
            "super" => {
                let mut at = module;
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    at = self.modules[at].parent?;
                    rest = &rest[1..];
                }
                (self.abs(at), rest)
            }
            name if self.modules[module].children.contains_key(name) => (self.abs(module), path),
            name => match self.modules[module].uses.get(name) {
                Some(Some(target)) if path.len() > 1 => {
                    let mut out = target.clone();
                    out.extend(path[1..].iter().cloned());
                    return Some(out);
                }
                _ => return None,
            },
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file defining what the absolute `path` names. An unknown name is taken to be defined
    /// in the module that should hold it (macro-made items); with `strict` (trying a glob
    /// import) it resolves to nothing instead.
    fn resolve(&self, path: &[String], strict: bool, depth: usize) -> Option<usize> {
        if depth > 16 {
            return None;
        }
        let mut module = 0;
        for (i, name) in path.iter().enumerate() {
            let m = &self.modules[module];
            if let Some(child) = m.children.get(name) {
                module = *child;
                continue;
            }
            if m.items.contains(name) {
                return Some(m.file);
            }
            if let Some(target) = m.uses.get(name) {
                let mut next = target.clone()?;
                next.extend(path[i + 1..].iter().cloned());
                return self.resolve(&next, strict, depth + 1);
            }
            if strict {
                return None;
            }
            for glob in &m.globs {
                let mut next = glob.clone();
                next.extend(path[i..].iter().cloned());
                if let Some(file) = self.resolve(&next, true, depth + 1) {
                    return Some(file);
                }
            }
            return Some(m.file);
        }
        Some(self.modules[module].file)
    }

    fn graph(mut self) -> Graph {
        // Use bindings are stored as written: make them absolute first.
        for module in 0..self.modules.len() {
            let uses: Vec<(String, Option<Vec<String>>)> =
                self.modules[module].uses.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let mut fixed = HashMap::new();
            for (name, path) in uses {
                let abs = path.and_then(|p| self.absolute_use(module, &p));
                fixed.insert(name, abs);
            }
            let globs: Vec<Vec<String>> = self.modules[module]
                .globs
                .clone()
                .iter()
                .filter_map(|p| self.absolute_use(module, p))
                .collect();
            self.modules[module].uses = fixed;
            self.modules[module].globs = globs;
        }
        let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for (index, module) in self.modules.iter().enumerate() {
            for path in &module.refs {
                let Some(abs) = self.absolute(index, path) else { continue };
                if let Some(file) = self.resolve(&abs, false, 0)
                    && file != module.file
                {
                    edges.entry(module.file).or_default().insert(file);
                }
            }
        }
        Graph { files: self.files, edges }
    }

    /// A `use` path of `module` made absolute (`None`: another crate).
    fn absolute_use(&self, module: usize, path: &[String]) -> Option<Vec<String>> {
        let first = path.first()?;
        match first.as_str() {
            "crate" | "self" | "super" => self.absolute(module, path),
            name if self.modules[module].children.contains_key(name) => {
                let mut base = self.abs(module);
                base.extend(path.iter().cloned());
                Some(base)
            }
            _ => None,
        }
    }
}

fn item_is_cfg_test(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => return false,
    };
    is_cfg_test(attrs)
}

fn item_name(item: &syn::Item) -> Option<String> {
    Some(
        match item {
            syn::Item::Const(i) => &i.ident,
            syn::Item::Enum(i) => &i.ident,
            syn::Item::Fn(i) => &i.sig.ident,
            syn::Item::Static(i) => &i.ident,
            syn::Item::Struct(i) => &i.ident,
            syn::Item::Trait(i) => &i.ident,
            syn::Item::Type(i) => &i.ident,
            syn::Item::Union(i) => &i.ident,
            syn::Item::Macro(i) => i.ident.as_ref()?,
            _ => return None,
        }
        .to_string(),
    )
}

enum Binding {
    Name(String),
    Glob,
}

/// Every leaf of a use tree: its full path and the name it binds.
fn flatten(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Binding)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last() {
                out.push((prefix.clone(), Binding::Name(last.clone())));
            }
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((path, Binding::Name(n.ident.to_string())));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((path, Binding::Name(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), Binding::Glob)),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| flatten(t, prefix, out)),
    }
}

/// Collects the paths a module's code names (not those of nested modules).
struct Collect {
    refs: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Collect {
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.refs.push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        macro_paths(mac.tokens.clone(), &mut self.refs);
        syn::visit::visit_macro(self, mac);
    }
}

/// Paths `a::b::c` in a macro's tokens.
fn macro_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => macro_paths(g.stream(), out),
            TokenTree::Ident(ident) => {
                let preceded_by_colons =
                    i >= 1 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == ':');
                if !preceded_by_colons {
                    let mut path = vec![ident.to_string()];
                    let mut j = i + 1;
                    while j + 2 < tokens.len()
                        && matches!(&tokens[j], TokenTree::Punct(p) if p.as_char() == ':')
                        && matches!(&tokens[j + 1], TokenTree::Punct(p) if p.as_char() == ':')
                    {
                        let TokenTree::Ident(next) = &tokens[j + 2] else { break };
                        path.push(next.to_string());
                        j += 3;
                    }
                    if path.len() > 1 {
                        out.push(path);
                    }
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Every elementary cycle found as the shortest way back to each file, each once, as file names
/// (`a.rs → b.rs → a.rs`).
pub fn cycles(graph: &Graph) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for start in 0..graph.files.len() {
        // Breadth-first from `start` back to `start`.
        let mut prev: HashMap<usize, usize> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        let mut found = None;
        'search: while let Some(at) = queue.pop_front() {
            for &next in graph.edges.get(&at).into_iter().flatten() {
                if next == start {
                    found = Some(at);
                    break 'search;
                }
                if next != start && !prev.contains_key(&next) {
                    prev.insert(next, at);
                    queue.push_back(next);
                }
            }
        }
        let Some(mut at) = found else { continue };
        let mut cycle = vec![at];
        while at != start {
            at = prev[&at];
            cycle.push(at);
        }
        cycle.reverse();
        // One rotation for each cycle: start at its smallest file.
        let min = cycle.iter().enumerate().min_by_key(|(_, f)| **f).map_or(0, |(i, _)| i);
        cycle.rotate_left(min);
        if seen.insert(cycle.clone()) {
            let mut names: Vec<&str> = cycle.iter().map(|f| graph.files[*f].as_str()).collect();
            names.push(names[0]);
            out.push(names.join(" → "));
        }
    }
    out
}
