//! Profile rewrites `llvm-profdata merge --sample` can apply: symbol remapping
//! (`--remapping-file`) and flattening of inlined callees
//! (`--convert-sample-profile-layout=flat`), with LLVM 19's semantics.

use formats::sampleprof::{Context, FunctionId, FunctionSamples, Profile};

use super::show::head_samples_estimate;

/// `SymbolRemapper` of llvm-profdata: `old new` pairs, one per line.
#[derive(Clone, Debug, Default)]
pub struct Remapper {
    table: crate::io::remap::RemapTable,
}

/// A malformed remapping line: its 1-based number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadRemapLine(pub usize);

impl Remapper {
    /// Parses a remapping file (see [`crate::io::remap::parse_remapping`]).
    pub fn parse(text: &[u8]) -> Result<Remapper, BadRemapLine> {
        let table = crate::io::remap::parse_remapping(text).map_err(BadRemapLine)?;
        Ok(Remapper { table })
    }

    /// The context a remapped profile is filed under (LLVM keeps only the remapped name).
    pub fn remap_context(&self, ctx: &Context) -> Context {
        Context::Plain(self.map(ctx.function()))
    }

    fn map(&self, f: &FunctionId) -> FunctionId {
        match f.as_name().and_then(|n| self.table.get(n)) {
            Some(new) => FunctionId::name(new),
            None => f.clone(),
        }
    }

    /// llvm-profdata's `remapSamples`: a copy with every name remapped, merging what
    /// collides. Like LLVM, the copy carries neither CFG checksum nor attributes.
    pub fn remap_samples(&self, fs: &FunctionSamples) -> FunctionSamples {
        let mut out = FunctionSamples {
            total: fs.total,
            head: fs.head,
            ..FunctionSamples::default()
        };
        for (loc, rec) in &fs.body {
            let mine = out.body.entry(*loc).or_default();
            mine.add_count(rec.count, 1);
            for (t, &c) in &rec.targets {
                mine.add_target(self.map(t), c, 1);
            }
        }
        for (loc, callees) in &fs.callsites {
            for (name, callee) in callees {
                let remapped = self.remap_samples(callee);
                let target = out.callee_mut(*loc, self.map(name));
                let _ = target.merge(&remapped, 1);
            }
        }
        out
    }

    /// The top-level profiles of `profile` remapped; context-sensitive contexts keep their
    /// frames (LLVM renames only the leaf, which it then files under a plain context).
    pub fn remap_profile(&self, profile: Profile) -> Profile {
        let mut out = Profile {
            functions: Default::default(),
            ..profile.clone_header()
        };
        for (ctx, fs) in &profile.functions {
            let key = Context::Plain(self.map(ctx.function()));
            let remapped = self.remap_samples(fs);
            let _ = out.functions.entry(key).or_default().merge(&remapped, 1);
        }
        out
    }
}

trait CloneHeader {
    fn clone_header(&self) -> Profile;
}

impl CloneHeader for Profile {
    /// Everything but the functions.
    fn clone_header(&self) -> Profile {
        Profile {
            functions: Default::default(),
            kind: self.kind,
            symbol_list: self.symbol_list.clone(),
            partial: self.partial,
            source_files: self.source_files.clone(),
            timestamps: self.timestamps.clone(),
        }
    }
}

/// `ProfileConverter::flattenProfile` (LLVM 19): context-sensitive profiles lose their
/// contexts (all contexts of a function merged); nested profiles get every inlined callee
/// as a top-level profile of its own, the call site becoming a line sample with a call target.
pub fn flatten(profile: &mut Profile) {
    let input = std::mem::take(&mut profile.functions);
    if profile.kind.cs {
        for (ctx, fs) in input {
            let key = Context::Plain(ctx.function().clone());
            let _ = profile.functions.entry(key).or_default().merge(&fs, 1);
        }
        profile.kind.cs = false;
        return;
    }
    for (ctx, fs) in &input {
        flatten_nested(&mut profile.functions, ctx.clone(), fs);
    }
}

fn flatten_nested(
    out: &mut std::collections::BTreeMap<Context, FunctionSamples>,
    ctx: Context,
    fs: &FunctionSamples,
) {
    let is_new = !out.contains_key(&ctx);
    let profile = out.entry(ctx).or_insert_with(|| {
        // The first copy keeps checksum and attributes; totals are recomputed below.
        FunctionSamples {
            total: 0,
            callsites: Default::default(),
            ..fs.clone()
        }
    });
    if !is_new {
        for (loc, rec) in &fs.body {
            let _ = profile.body.entry(*loc).or_default().merge(rec, 1);
        }
    }
    let mut total = fs.total;
    let mut nested = Vec::new();
    for (loc, callees) in &fs.callsites {
        for (name, callee) in callees {
            let head = head_samples_estimate(callee, false);
            let rec = profile.body.entry(*loc).or_default();
            rec.add_count(head, 1);
            rec.add_target(name.clone(), head, 1);
            total = total.saturating_sub(callee.total).wrapping_add(head);
            nested.push((Context::Plain(name.clone()), callee));
        }
    }
    profile.add_total(total, 1);
    profile.head = head_samples_estimate(profile, false);
    // LLVM recurses inside the loop above; visiting the inlinees afterwards gives the same
    // result, since every visit ends by recomputing the head from the (grown) body.
    for (callee_ctx, callee) in nested {
        flatten_nested(out, callee_ctx, callee);
    }
}
