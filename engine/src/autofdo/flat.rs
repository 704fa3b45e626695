//! A sample profile under construction, as flat hash tables keyed by small ids: each
//! inlined-callee context is an id (its parent's id, the call site, the callee's name id), and
//! body lines and call targets are entries keyed by the context's id. The nested `BTreeMap`s
//! of [`FunctionSamples`] are built one top-level function at a time, when the profile is
//! written: for a profile of 800,000 lines they took ≈ 300 MB, most of it in map nodes sized
//! for eleven entries holding one or two.

use std::cmp::Reverse;

use formats::sampleprof::model::{Context, FunctionId, FunctionSamples, LineLocation};
use hashbrown::HashMap;

/// The parent of a top-level context.
pub(super) const ROOT: u32 = u32::MAX;

/// How two counts of one line combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LineCount {
    /// The larger: a line's count is the maximum over its instructions (LBR ranges).
    Max,
    /// The sum (IP samples).
    Sum,
}

impl LineCount {
    fn combine(self, into: &mut u64, n: u64) {
        *into = match self {
            LineCount::Max => (*into).max(n),
            LineCount::Sum => *into + n,
        };
    }
}

#[derive(Clone, Copy, Debug)]
struct Ctx {
    parent: u32,
    /// Where the parent calls this context (0.0 for a top-level one).
    site: LineLocation,
    name: u32,
    total: u64,
    head: u64,
}

/// A profile keyed by name ids (see the module comment).
#[derive(Debug, Default)]
pub(super) struct FlatProfile {
    index: HashMap<(u32, LineLocation, u32), u32>,
    ctxs: Vec<Ctx>,
    lines: HashMap<(u32, LineLocation), u64>,
    targets: HashMap<(u32, LineLocation, u32), u64>,
}

impl FlatProfile {
    /// The context of function `name` inlined at `site` of `parent` ([`ROOT`] and 0.0: a
    /// top-level profile), created with zero counts when new.
    pub(super) fn context(&mut self, parent: u32, site: LineLocation, name: u32) -> u32 {
        let ctxs = &mut self.ctxs;
        *self.index.entry((parent, site, name)).or_insert_with(|| {
            ctxs.push(Ctx {
                parent,
                site,
                name,
                total: 0,
                head: 0,
            });
            (ctxs.len() - 1) as u32
        })
    }

    /// The top-level context of `name`.
    pub(super) fn top(&mut self, name: u32) -> u32 {
        self.context(ROOT, LineLocation::default(), name)
    }

    pub(super) fn add_total(&mut self, ctx: u32, n: u64) {
        self.ctxs[ctx as usize].total += n;
    }

    pub(super) fn add_head(&mut self, ctx: u32, n: u64) {
        self.ctxs[ctx as usize].head += n;
    }

    /// Adds `n` to line `loc` of `ctx` as `how` says (creating the line).
    pub(super) fn add_line(&mut self, ctx: u32, loc: LineLocation, n: u64, how: LineCount) {
        how.combine(self.lines.entry((ctx, loc)).or_insert(0), n);
    }

    /// Adds `n` calls to `callee` at line `loc` of `ctx` (creating the line with count 0).
    pub(super) fn add_target(&mut self, ctx: u32, loc: LineLocation, callee: u32, n: u64) {
        self.lines.entry((ctx, loc)).or_insert(0);
        *self.targets.entry((ctx, loc, callee)).or_insert(0) += n;
    }

    /// The name ids of the top-level contexts.
    pub(super) fn top_names(&self) -> impl Iterator<Item = u32> + '_ {
        self.ctxs
            .iter()
            .filter(|c| c.parent == ROOT)
            .map(|c| c.name)
    }

    /// Adds `other` into `self`: totals, heads and call targets add up, line counts combine
    /// as `how` says.
    pub(super) fn merge(&mut self, other: FlatProfile, how: LineCount) {
        // A context's parent is always created before it, so one pass maps every id.
        let mut id = Vec::with_capacity(other.ctxs.len());
        for c in &other.ctxs {
            let parent = match c.parent {
                ROOT => ROOT,
                p => id[p as usize],
            };
            let mine = self.context(parent, c.site, c.name);
            self.add_total(mine, c.total);
            self.add_head(mine, c.head);
            id.push(mine);
        }
        for ((c, loc), n) in other.lines {
            self.add_line(id[c as usize], loc, n, how);
        }
        for ((c, loc, callee), n) in other.targets {
            *self
                .targets
                .entry((id[c as usize], loc, callee))
                .or_insert(0) += n;
        }
    }

    /// The top-level profiles in [`sorted_functions`](formats::sampleprof::Profile::sorted_functions)'
    /// order (total samples descending, then context), those for which `keep(name id)`
    /// holds, to be built one at a time. `names` are the names by id.
    pub(super) fn into_functions(
        self,
        names: Vec<FunctionId>,
        keep: impl Fn(u32) -> bool,
    ) -> Functions {
        let tree = Tree::new(self);
        let mut tops: Vec<(Reverse<u64>, Context, u32)> = (0..tree.ctxs.len() as u32)
            .filter(|&c| tree.ctxs[c as usize].parent == ROOT)
            .filter(|&c| keep(tree.ctxs[c as usize].name))
            .map(|c| {
                let ctx = &tree.ctxs[c as usize];
                let name = names[ctx.name as usize].clone();
                (Reverse(ctx.total), Context::Plain(name), c)
            })
            .collect();
        tops.sort_unstable();
        Functions {
            tree,
            tops: tops
                .into_iter()
                .map(|(_, context, c)| (context, c))
                .collect(),
            names,
        }
    }
}

/// The top-level profiles of a [`FlatProfile`], in order, each built on demand (from any
/// thread).
pub(super) struct Functions {
    tree: Tree,
    tops: Vec<(Context, u32)>,
    names: Vec<FunctionId>,
}

impl Functions {
    pub(super) fn len(&self) -> usize {
        self.tops.len()
    }

    /// The `i`th top-level profile.
    pub(super) fn get(&self, i: usize) -> (Context, FunctionSamples) {
        let (context, c) = &self.tops[i];
        (context.clone(), self.tree.build(*c, &self.names))
    }
}

/// A [`FlatProfile`] with each context's children, lines and call targets found by ranges
/// of sorted arrays.
struct Tree {
    ctxs: Vec<Ctx>,
    /// Context ids sorted by parent, and where each parent's run starts.
    children: Vec<u32>,
    child_start: Vec<u32>,
    lines: Vec<(u32, LineLocation, u64)>,
    line_start: Vec<u32>,
    targets: Vec<(u32, LineLocation, u32, u64)>,
    target_start: Vec<u32>,
}

/// Where each context's run of `keyed` (sorted by context) starts: `n + 1` offsets.
fn run_starts<T>(keyed: &[T], n: usize, ctx: impl Fn(&T) -> u32) -> Vec<u32> {
    let mut start = vec![0u32; n + 1];
    for x in keyed {
        start[ctx(x) as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    start
}

impl Tree {
    fn new(p: FlatProfile) -> Tree {
        drop(p.index);
        let n = p.ctxs.len();
        let mut children: Vec<u32> = (0..n as u32)
            .filter(|&c| p.ctxs[c as usize].parent != ROOT)
            .collect();
        children.sort_unstable_by_key(|&c| p.ctxs[c as usize].parent);
        let child_start = run_starts(&children, n, |&c| p.ctxs[c as usize].parent);
        let mut lines: Vec<_> = p.lines.into_iter().map(|((c, l), n)| (c, l, n)).collect();
        lines.sort_unstable_by_key(|x| (x.0, x.1));
        let line_start = run_starts(&lines, n, |x| x.0);
        let mut targets: Vec<_> = p
            .targets
            .into_iter()
            .map(|((c, l, t), n)| (c, l, t, n))
            .collect();
        targets.sort_unstable_by_key(|x| (x.0, x.1, x.2));
        let target_start = run_starts(&targets, n, |x| x.0);
        Tree {
            ctxs: p.ctxs,
            children,
            child_start,
            lines,
            line_start,
            targets,
            target_start,
        }
    }

    fn run<'a, T>(all: &'a [T], start: &[u32], c: u32) -> &'a [T] {
        &all[start[c as usize] as usize..start[c as usize + 1] as usize]
    }

    /// The [`FunctionSamples`] of context `c` and its inlinees.
    fn build(&self, c: u32, names: &[FunctionId]) -> FunctionSamples {
        let ctx = &self.ctxs[c as usize];
        let mut f = FunctionSamples {
            total: ctx.total,
            head: ctx.head,
            ..Default::default()
        };
        for &(_, loc, n) in Self::run(&self.lines, &self.line_start, c) {
            f.body.entry(loc).or_default().count = n;
        }
        for &(_, loc, callee, n) in Self::run(&self.targets, &self.target_start, c) {
            let targets = &mut f.body.entry(loc).or_default().targets;
            targets.insert(names[callee as usize].clone(), n);
        }
        for &child in Self::run(&self.children, &self.child_start, c) {
            let inner = self.build(child, names);
            let child = &self.ctxs[child as usize];
            f.callsites
                .entry(child.site)
                .or_default()
                .insert(names[child.name as usize].clone(), inner);
        }
        f
    }
}

/// Finds the chain of contexts of an inline stack, reusing the previous stack's chain as far
/// as the two agree (consecutive instructions mostly share their stack).
#[derive(Default)]
pub(super) struct Chain {
    frames: Vec<(u32, LineLocation)>,
    ids: Vec<u32>,
}

impl Chain {
    /// `getLeafProfileAndAddTotalSamples`: the context of the innermost of `frames`
    /// (outermost first: name id and location, the discriminator as the line table has it),
    /// adding `count` to the total of every context on the way. Call sites take the base
    /// discriminator, `site_disc`.
    pub(super) fn leaf(
        &mut self,
        p: &mut FlatProfile,
        frames: &[(u32, LineLocation)],
        count: u64,
        site_disc: impl Fn(u32) -> u32,
    ) -> u32 {
        // ids[i] depends on the names of frames 0..=i and the locations of frames 0..i.
        let mut same = 0;
        while same < frames.len()
            && same < self.frames.len()
            && frames[same].0 == self.frames[same].0
            && (same == 0 || frames[same - 1].1 == self.frames[same - 1].1)
        {
            same += 1;
        }
        self.ids.truncate(same);
        for i in same..frames.len() {
            let id = match i {
                0 => p.top(frames[0].0),
                _ => {
                    let site = frames[i - 1].1;
                    let site = LineLocation::new(site.line, site_disc(site.disc));
                    p.context(self.ids[i - 1], site, frames[i].0)
                }
            };
            self.ids.push(id);
        }
        self.frames.clear();
        self.frames.extend_from_slice(frames);
        for &c in &self.ids {
            p.add_total(c, count);
        }
        *self.ids.last().expect("frames is not empty")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use formats::sampleprof::model::Profile;

    fn all(f: Functions) -> impl Iterator<Item = (Context, FunctionSamples)> {
        (0..f.len()).map(move |i| f.get(i))
    }

    fn into_profile(p: FlatProfile, names: &[FunctionId]) -> Profile {
        let mut out = Profile::default();
        out.functions
            .extend(all(p.into_functions(names.to_vec(), |_| true)));
        out
    }

    fn names() -> Vec<FunctionId> {
        ["main", "inlined", "callee"]
            .iter()
            .map(|n| FunctionId::name(n.as_bytes()))
            .collect()
    }

    /// The same profile built directly in the model, the way the flat one is meant to be.
    fn model_of(steps: &[(Vec<(u32, LineLocation)>, u64)], names: &[FunctionId]) -> Profile {
        let mut out = Profile::default();
        for (frames, n) in steps {
            let top = Context::Plain(names[frames[0].0 as usize].clone());
            let mut f = out.functions.entry(top).or_default();
            f.total += n;
            for i in 1..frames.len() {
                f = f.callee_mut(frames[i - 1].1, names[frames[i].0 as usize].clone());
                f.total += n;
            }
            let r = f.body.entry(frames.last().unwrap().1).or_default();
            r.count = r.count.max(*n);
        }
        out
    }

    #[test]
    fn flat_profiles_merged_in_parts_equal_the_nested_model() {
        let names = names();
        let l = LineLocation::new;
        let steps: Vec<(Vec<(u32, LineLocation)>, u64)> = vec![
            (vec![(0, l(1, 0))], 5),
            (vec![(0, l(2, 0)), (1, l(7, 0))], 3),
            (vec![(0, l(2, 0)), (1, l(7, 0))], 9),
            (vec![(0, l(2, 0)), (1, l(8, 0))], 2),
            (vec![(0, l(3, 0)), (1, l(7, 0))], 4),
            (vec![(1, l(1, 0))], 1),
            (vec![(0, l(2, 0)), (1, l(9, 0)), (2, l(0, 0))], 6),
        ];
        // Split into parts at every point, each part built on its own, then merged.
        for cut in 0..=steps.len() {
            let mut whole = FlatProfile::default();
            for part in [&steps[..cut], &steps[cut..]] {
                let mut p = FlatProfile::default();
                let mut chain = Chain::default();
                for (frames, n) in part {
                    let leaf = chain.leaf(&mut p, frames, *n, |d| d);
                    p.add_line(leaf, frames.last().unwrap().1, *n, LineCount::Max);
                }
                whole.merge(p, LineCount::Max);
            }
            let got = into_profile(whole, &names);
            assert_eq!(
                got.functions,
                model_of(&steps, &names).functions,
                "cut {cut}"
            );
        }
    }

    #[test]
    fn functions_come_in_the_order_of_sorted_functions_and_keep_filters_them() {
        let names = names();
        let totals = [(2, 5), (0, 5), (1, 9)];
        let flat = |keep: fn(u32) -> bool| {
            let mut p = FlatProfile::default();
            for (name, total) in totals {
                let c = p.top(name);
                p.add_total(c, total);
            }
            all(p.into_functions(names.clone(), keep))
                .map(|(c, _)| c)
                .collect::<Vec<Context>>()
        };
        let mut model = Profile::default();
        for (name, total) in totals {
            let f = model
                .functions
                .entry(Context::Plain(names[name as usize].clone()));
            f.or_default().total = total;
        }
        let expected: Vec<Context> = model
            .sorted_functions()
            .into_iter()
            .map(|(c, _)| c.clone())
            .collect();
        assert_eq!(flat(|_| true), expected);
        let without_first: Vec<Context> = expected[1..].to_vec();
        assert_eq!(expected[0], Context::Plain(names[1].clone()));
        assert_eq!(flat(|n| n != 1), without_first);
    }

    #[test]
    fn call_targets_create_their_line_and_add_up_across_parts() {
        let names = names();
        let mut whole = FlatProfile::default();
        for n in [3, 4] {
            let mut p = FlatProfile::default();
            let main = p.top(0);
            p.add_target(main, LineLocation::new(4, 0), 2, n);
            let callee = p.top(2);
            p.add_head(callee, n);
            whole.merge(p, LineCount::Max);
        }
        let got = into_profile(whole, &names);
        let main = &got.functions[&Context::Plain(names[0].clone())];
        let line = &main.body[&LineLocation::new(4, 0)];
        assert_eq!(line.count, 0);
        assert_eq!(line.targets[&names[2]], 7);
        assert_eq!(got.functions[&Context::Plain(names[2].clone())].head, 7);
    }
}
