//! `toolhost-bindgen c|go WIT_DIR WORLD OUT_DIR`: writes the C or Go bindings
//! of a world, as `wit-bindgen c|go --world WORLD --out-dir OUT_DIR WIT_DIR`
//! does, with wit-bindgen's default options except: C without the
//! `*_component_type.o` object (the build embeds the WIT with `wasm-tools
//! component embed` instead, so the committed bindings are all text), Go not
//! gofmt'ed.

use std::path::Path;

use anyhow::{Context, Result, bail};
use wit_bindgen_core::wit_parser::Resolve;
use wit_bindgen_core::{Files, WorldGenerator};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [language, wit, world, out] = args.as_slice() else {
        bail!("usage: toolhost-bindgen c|go WIT_DIR WORLD OUT_DIR");
    };
    let mut generator: Box<dyn WorldGenerator> = match language.as_str() {
        "c" => wit_bindgen_c::Opts {
            no_object_file: true,
            ..Default::default()
        }
        .build(),
        "go" => wit_bindgen_go::Opts {
            format: wit_bindgen_go::Format::False,
            ..Default::default()
        }
        .build(),
        other => bail!("no generator for `{other}`: c or go"),
    };
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(wit)
        .with_context(|| format!("reading {wit}"))?;
    let world = resolve.select_world(&[package], Some(world))?;
    let mut files = Files::default();
    generator.generate(&mut resolve, world, &mut files)?;
    for (name, contents) in files.iter() {
        let path = Path::new(out).join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
