//! The RomRaider family: one `<roms>` document holding many `<rom>`s, each
//! built on a sibling by `base="XMLID"`, as RomRaider's `ecu_defs.xml` and
//! the definitions shipped beside Subaru ROMs are kept. The format itself
//! is read by [`crate::romraider`].

use super::{Family, Listed, Recognition, Stamp, file_label, match_id};
use crate::definition::Definition;
use crate::error::Error;
use crate::romraider::Document;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One RomRaider document, parsed once per change, and the definitions
/// resolved from it so far (by xmlid).
struct CachedDocument {
    stamp: Stamp,
    document: Result<Arc<Document>, String>,
    definitions: HashMap<String, Arc<Definition>>,
}

/// RomRaider definitions, parsed once per change of their files.
#[derive(Default)]
pub struct RomRaider {
    files: HashMap<PathBuf, CachedDocument>,
}

impl Family for RomRaider {
    fn name(&self) -> &str {
        "RomRaider"
    }

    fn claims(&self, _path: &Path, head: &[u8]) -> bool {
        crate::romraider::is_romraider(&String::from_utf8_lossy(head))
    }

    fn recognize(
        &mut self,
        _dir: &Path,
        files: &[Listed],
        image: &[u8],
    ) -> Result<Recognition, Error> {
        self.refresh(files);
        let mut found = Recognition::default();
        for Listed { path, .. } in files {
            let Some(cached) = self.files.get_mut(path) else {
                continue;
            };
            let document = match &cached.document {
                Ok(d) => d.clone(),
                Err(e) => {
                    found
                        .tried
                        .push(format!("{} (unreadable: {e})", file_label(path)));
                    continue;
                }
            };
            for id in document.roms() {
                let base = crate::image::base_for(id.field("memmodel"), image.len());
                let Some(result) = match_id(id, image, base) else {
                    continue;
                };
                let xmlid = id.xmlid.clone().unwrap_or_default();
                if let Err(why) = result {
                    found.tried.push(format!("{xmlid} ({why})"));
                    continue;
                }
                let definition = match cached.definitions.get(&xmlid) {
                    Some(d) => d.clone(),
                    None => {
                        let d = document
                            .definition(&xmlid, path.clone())
                            .map(Arc::new)
                            .map_err(|message| Error::Definition {
                                file: path.clone(),
                                message,
                            })?;
                        cached.definitions.insert(xmlid, d.clone());
                        d
                    }
                };
                found.matches.push(definition);
            }
        }
        Ok(found)
    }
}

impl RomRaider {
    /// Parses the files new or changed since the last call and forgets
    /// the ones gone.
    fn refresh(&mut self, files: &[Listed]) {
        for Listed { path, stamp, .. } in files {
            if self.files.get(path).is_some_and(|c| c.stamp == *stamp) {
                continue;
            }
            let document = fs::read_to_string(path)
                .map_err(|e| e.to_string())
                .and_then(|text| crate::romraider::parse(&text))
                .map(Arc::new);
            self.files.insert(
                path.clone(),
                CachedDocument {
                    stamp: *stamp,
                    document,
                    definitions: HashMap::new(),
                },
            );
        }
        if self.files.len() > files.len() {
            let listed: std::collections::HashSet<&PathBuf> =
                files.iter().map(|l| &l.path).collect();
            self.files.retain(|p, _| listed.contains(p));
        }
    }
}
