//! The README and the manual in docs/: every relative link and image names a file that
//! exists, every `#anchor` names a heading of the page it points into, and every page of
//! docs/ is in SUMMARY.md (the mdBook's table of contents), so none is unreachable.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages checked: README.md, CHANGELOG.md and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md"), repo().join("CHANGELOG.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A heading's anchor as GitHub and mdBook both make it: the heading's text in lower case,
/// letters, digits, `-` and `_` kept, spaces turned into `-`, everything else dropped; a
/// repeated anchor gets `-1`, `-2`, ... Written here because neither publishes its slug
/// function as a crate; the rule is short and both document it.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap_or_default();
                let slug: String = text
                    .trim()
                    .to_lowercase()
                    .chars()
                    .filter_map(|c| match c {
                        ' ' => Some('-'),
                        c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                        _ => None,
                    })
                    .collect();
                let n = seen.entry(slug.clone()).or_insert(0);
                out.insert(if *n == 0 {
                    slug.clone()
                } else {
                    format!("{slug}-{n}")
                });
                *n += 1;
            }
            _ => {}
        }
    }
    out
}

/// Every link and image destination of a page.
fn links(markdown: &str) -> Vec<String> {
    Parser::new(markdown)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .collect()
}

fn is_external(dest: &str) -> bool {
    dest.contains("://") || dest.starts_with("mailto:")
}

#[test]
fn every_relative_link_and_anchor_in_the_readme_and_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("page reads");
        let dir = page.parent().unwrap_or(Path::new("."));
        for dest in links(&text) {
            if is_external(&dest) {
                continue;
            }
            checked += 1;
            let (path, anchor) = match dest.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (dest.as_str(), None),
            };
            let target = if path.is_empty() {
                page.clone()
            } else {
                dir.join(path)
            };
            let name = page.strip_prefix(repo()).unwrap_or(&page).display();
            if !target.exists() {
                broken.push(format!("{name}: ({dest}): no such file"));
                continue;
            }
            if let Some(anchor) = anchor {
                let Ok(target_text) = std::fs::read_to_string(&target) else {
                    broken.push(format!(
                        "{name}: ({dest}): an anchor into a file that is not text"
                    ));
                    continue;
                };
                if !anchors(&target_text).contains(anchor) {
                    broken.push(format!("{name}: ({dest}): no heading makes #{anchor}"));
                }
            }
        }
    }
    assert!(
        checked > 30,
        "only {checked} links found: is the parser reading the pages?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_of_the_manual_is_in_its_summary() {
    let summary = std::fs::read_to_string(repo().join("docs/SUMMARY.md")).expect("SUMMARY.md");
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    let missing: Vec<String> = pages()
        .into_iter()
        .filter(|p| p.parent() == Some(repo().join("docs").as_path()))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n != "SUMMARY.md" && !listed.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "pages not in docs/SUMMARY.md: {missing:?}"
    );
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; the manual belongs in docs/"
    );
    // The two commands come first: install-and-check, then the test suite.
    let first_block: Vec<&str> = readme
        .split("```")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && *l != "sh")
        .collect();
    assert_eq!(first_block.len(), 2, "{first_block:?}");
    assert!(first_block[0].contains("sinkrate check"), "{first_block:?}");
    assert!(
        first_block[1].contains("scripts/test.sh"),
        "{first_block:?}"
    );
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    let a = anchors(
        "# sinkrate bench: fio compatibility\n## Output\n## Output\n### `--find-max`: the rate\n",
    );
    assert!(a.contains("sinkrate-bench-fio-compatibility"), "{a:?}");
    assert!(a.contains("output") && a.contains("output-1"), "{a:?}");
    assert!(a.contains("--find-max-the-rate"), "{a:?}");
}
