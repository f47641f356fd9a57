//! Skills: MCP's skills extension (SEP-2640, `io.modelcontextprotocol/skills`).
//!
//! A skill is a folder of files (a `SKILL.md` with YAML frontmatter, and
//! whatever examples it points to). A plugin serves one as static resources
//! under `skill://<path>/`: `@resource skill://ecu-tuning/SKILL.md` and its
//! siblings. So skills need nothing new in WIT, and they go through
//! plugin prefixes, URI ownership, collisions and hot swap as resources do;
//! `resources/read` reads their files. This module only gathers them:
//! `skills/list` and `skills/get` answer each skill's frontmatter and the
//! manifest of its files (SHA-256 digest and size of each), read from the
//! plugin once per loaded instance.

use crate::mcp::primitives::read_resource;
use crate::runtime::context::CallContext;
use crate::runtime::registry::Catalog;
use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{ResourceContents, Skill, SkillFrontmatter, SkillResource, SkillResources};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The URI scheme skills are served under.
const SCHEME: &str = "skill://";
/// The file that makes a folder a skill.
const SKILL_FILE: &str = "/SKILL.md";
/// Most skills listed: a plugin cannot flood a client's context.
const MAX_SKILLS: usize = 64;
/// Most files of one skill.
const MAX_FILES: usize = 64;

/// Every skill the catalogue's plugins serve, in URI order. A skill whose
/// files cannot be read or whose frontmatter does not parse is left out
/// and logged: one plugin's broken skill must not hide the others.
pub async fn list(catalog: &Catalog, ctx: &CallContext) -> Vec<Skill> {
    let mut skills = Vec::new();
    for uri in skill_uris(catalog).into_iter().take(MAX_SKILLS) {
        match skill(catalog, &uri, ctx).await {
            Ok(skill) => skills.push(skill),
            Err(e) => tracing::warn!(uri, "skill left out of skills/list: {}", e.message),
        }
    }
    skills
}

/// The skill whose `SKILL.md` is at `uri`.
pub async fn get(catalog: &Catalog, uri: &str, ctx: &CallContext) -> Result<Skill, ErrorData> {
    let listed = catalog.resources().iter().any(|r| r.uri == uri);
    if !(listed && is_skill_file(uri)) {
        return Err(ErrorData::invalid_params(
            format!(
                "no skill at {}: skills/list shows the skills served (each a skill://…/SKILL.md)",
                crate::wit::names::clip(uri)
            ),
            None,
        ));
    }
    skill(catalog, uri, ctx).await
}

/// The catalogue's resources as `resources/list` shows them, each skill's
/// `SKILL.md` named and described by its frontmatter (as the extension
/// asks).
pub async fn listed(catalog: &Catalog, ctx: &CallContext) -> Vec<rmcp::model::Resource> {
    let mut resources = catalog.resources().to_vec();
    for resource in &mut resources {
        if !is_skill_file(&resource.uri) {
            continue;
        }
        if let Ok(skill) = skill(catalog, &resource.uri, ctx).await {
            resource.name = skill.frontmatter.name;
            resource.description = Some(skill.frontmatter.description);
        }
    }
    resources
}

/// Whether `uri` names a skill's `SKILL.md`.
fn is_skill_file(uri: &str) -> bool {
    uri.starts_with(SCHEME) && uri.ends_with(SKILL_FILE)
}

/// The skill at `uri` (a listed `SKILL.md`), read once per plugin code:
/// its files are the plugin's fixed resources, so a listing costs no
/// plugin call after the first, and a hot swap to other code (another
/// `generation`) reads them again.
async fn skill(catalog: &Catalog, uri: &str, ctx: &CallContext) -> Result<Skill, ErrorData> {
    let Some((plugin, _, _)) = catalog.resource(uri) else {
        return Err(ErrorData::internal_error(
            format!("{uri} is not served"),
            None,
        ));
    };
    let key = (plugin.generation, uri.to_owned());
    let known = skills()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    if let Some(skill) = known {
        return Ok(skill);
    }
    let skill = read(catalog, uri, ctx).await?;
    let mut cache = skills().lock().unwrap_or_else(|e| e.into_inner());
    // Instances gone (hot swapped) leave their entries behind: bounded by
    // dropping the lot now and then.
    if cache.len() > 4 * MAX_SKILLS {
        cache.clear();
    }
    cache.insert(key, skill.clone());
    Ok(skill)
}

/// Skills read, per (plugin code's generation, `SKILL.md` URI).
type SkillCache = std::sync::Mutex<std::collections::HashMap<(u64, String), Skill>>;

fn skills() -> &'static SkillCache {
    static CACHE: std::sync::OnceLock<SkillCache> = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Reads the skill whose `SKILL.md` is at `uri`: its frontmatter, and the
/// digest and size of every file in its folder.
async fn read(catalog: &Catalog, uri: &str, ctx: &CallContext) -> Result<Skill, ErrorData> {
    let folder = uri.strip_suffix(SKILL_FILE).unwrap_or(uri);
    let prefix = format!("{folder}/");
    let mut files = Vec::new();
    let mut frontmatter = None;
    for file in catalog
        .resources()
        .iter()
        .filter(|r| r.uri.starts_with(&prefix))
        .take(MAX_FILES)
    {
        let bytes = contents(catalog, &file.uri, ctx).await?;
        if file.uri == uri {
            frontmatter = Some(parse_frontmatter(&String::from_utf8_lossy(&bytes)).map_err(
                |why| {
                    ErrorData::internal_error(
                        format!("the skill's SKILL.md frontmatter does not read: {why}"),
                        None,
                    )
                },
            )?);
        }
        files.push(SkillResource::new(
            file.uri.clone(),
            format!(
                "sha256:{}",
                crate::runtime::cache::hex(&Sha256::digest(&bytes))
            ),
            bytes.len() as u64,
        ));
    }
    let frontmatter = frontmatter
        .ok_or_else(|| ErrorData::internal_error(format!("{uri} could not be read"), None))?;
    // The spec names a skill by its folder: the last segment is its name.
    let name = folder.rsplit('/').next().unwrap_or_default();
    if frontmatter.name != name {
        return Err(ErrorData::internal_error(
            format!(
                "the skill at {uri} is named `{}` in its frontmatter; its folder must carry that name",
                frontmatter.name
            ),
            None,
        ));
    }
    Ok(Skill::new(uri, frontmatter, SkillResources::Files(files)))
}

/// The `SKILL.md` URIs the catalogue lists, sorted.
fn skill_uris(catalog: &Catalog) -> Vec<String> {
    let mut uris: Vec<String> = catalog
        .resources()
        .iter()
        .map(|r| r.uri.clone())
        .filter(|u| is_skill_file(u))
        .collect();
    uris.sort();
    uris
}

/// A resource's bytes: its text, or its decoded blob.
async fn contents(catalog: &Catalog, uri: &str, ctx: &CallContext) -> Result<Vec<u8>, ErrorData> {
    let read = read_resource(catalog, uri, ctx.clone()).await?;
    let mut bytes = Vec::new();
    for part in read.contents {
        match part {
            ResourceContents::TextResourceContents { text, .. } => {
                bytes.extend_from_slice(text.as_bytes())
            }
            ResourceContents::BlobResourceContents { blob, .. } => bytes.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .unwrap_or_default(),
            ),
            _ => {}
        }
    }
    Ok(bytes)
}

/// The YAML frontmatter of a `SKILL.md` (between `---` lines at its top)
/// as the extension carries it. What skills write is read: `key: value`
/// scalars (plain, single- or double-quoted) and one level of nested maps
/// (`metadata:` then indented `key: value` lines); anything else is an
/// error naming the line, rather than a frontmatter quietly different from
/// the file's.
pub fn parse_frontmatter(text: &str) -> Result<SkillFrontmatter, String> {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("SKILL.md must begin with a `---` line opening its frontmatter".into());
    }
    let mut fields = Map::new();
    let mut nested: Option<(String, Map<String, Value>)> = None;
    let mut closed = false;
    for (n, line) in lines.enumerate() {
        let at = n + 2;
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        let (key, value) = line
            .trim()
            .split_once(':')
            .ok_or_else(|| format!("line {at}: expected `key: value`"))?;
        let (key, value) = (key.trim().to_owned(), value.trim());
        if indented {
            let Some((_, map)) = nested.as_mut() else {
                return Err(format!("line {at}: indented, but under no map"));
            };
            map.insert(key, scalar(value, at)?);
            continue;
        }
        if let Some((name, map)) = nested.take() {
            fields.insert(name, Value::Object(map));
        }
        if value.is_empty() {
            nested = Some((key, Map::new()));
        } else {
            fields.insert(key, scalar(value, at)?);
        }
    }
    if let Some((name, map)) = nested {
        fields.insert(name, Value::Object(map));
    }
    if !closed {
        return Err("the frontmatter has no closing `---` line".into());
    }
    let text_field = |fields: &mut Map<String, Value>, key: &str| match fields.remove(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(format!("the frontmatter needs a `{key}`")),
    };
    let name = text_field(&mut fields, "name")?;
    let description = text_field(&mut fields, "description")?;
    let mut frontmatter = SkillFrontmatter::new(name, description);
    for (key, value) in fields {
        frontmatter = frontmatter.with_field(key, value);
    }
    Ok(frontmatter)
}

/// One YAML scalar, as text: quotes removed (the only escape read is `\"`
/// in double quotes); lists and flow maps are refused.
fn scalar(value: &str, at: usize) -> Result<Value, String> {
    if value.starts_with('[')
        || value.starts_with('{')
        || value.starts_with('|')
        || value.starts_with('>')
    {
        return Err(format!(
            "line {at}: only plain, quoted and one-level nested values are read here"
        ));
    }
    let unquoted = if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        inner.replace("\\\"", "\"")
    } else if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        inner.replace("''", "'")
    } else {
        value.to_owned()
    };
    Ok(Value::String(unquoted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_reads_as_the_extension_carries_it() {
        let f = parse_frontmatter(
            "---\nname: knock-diagnosis\ndescription: \"Find knock: logs, then tables\"\nlicense: Apache-2.0\nmetadata:\n  author: benchtop\n  version: '1'\n---\n# Knock\n",
        )
        .unwrap();
        assert_eq!(f.name, "knock-diagnosis");
        assert_eq!(f.description, "Find knock: logs, then tables");
        assert_eq!(f.extra["license"], "Apache-2.0");
        assert_eq!(f.extra["metadata"]["version"], "1");
        for (bad, why) in [
            ("# no frontmatter", "begin with"),
            ("---\nname: x\n", "closing"),
            ("---\nname: x\n---\n", "description"),
            (
                "---\nname: x\ndescription: y\ntags: [a, b]\n---\n",
                "line 4",
            ),
        ] {
            let e = parse_frontmatter(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
