#!/usr/bin/env python3
# Static stack report of the page-table core (issue 17, item 5): reads the
# -fcallgraph-info=su files gcc wrote for core/ and the formats, and prints
# for every public page-table call the deepest call chain the graph allows
# (frames as -fstack-usage gives them). Indirect calls are resolved the way
# the engine makes them: from the argument-checking entry points
# (core/pt_update.c, mmp_core_pt_run) to the engine instances (pt->run),
# elsewhere to the descriptor formats' hooks; the caller's hooks
# (alloc_table, tlb_flush...) count as nothing.
#
# usage: stack-usage.py <frame budget> <chain budget> file.ci...
# Fails when a function's own frame exceeds the frame budget, or a public
# call's deepest chain exceeds the chain budget. The chain is an upper
# bound (not every path the graph has is taken); tests/test_pt_stack.c
# measures the real depth on a painted stack.
import re
import sys

frame_budget, chain_budget = int(sys.argv[1]), int(sys.argv[2])
size, edges, fileof = {}, {}, {}
node_re = re.compile(r'node: \{ title: "([^"]+)" label: "([^"]*)"')
edge_re = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
for ci in sys.argv[3:]:
    for line in open(ci):
        m = node_re.match(line)
        if m:
            title, label = m.groups()
            b = re.search(r'\\n(\d+) bytes', label)
            if b:  # defined here
                size[title] = int(b.group(1))
                loc = label.split('\\n')[1] if '\\n' in label else ''
                fileof[title] = loc.split(':')[0]
            continue
        m = edge_re.match(line)
        if m:
            edges.setdefault(m.group(1), []).append(m.group(2))


def name(t):
    return t.split(':')[-1]


engines = [t for t in size if re.fullmatch(r'(mmp_core_)?pt_run_(sh_)?(\d|generic)', name(t))]


def is_sh(n):
    """A shared-call instance (core/pt_shared.c)."""
    return re.match(r'(mmp_core_)?pt_run_sh_', n) is not None
hooks = [t for t in size if re.search(r'arch/[^/]+/pt_[^/]+\.c$', fileof.get(t, ''))]


# Callers of pt_break_keep whose slots hold leaves only: their breaks
# unlink no subtree (no walk of one). WRAPPERS pass the caller's slots on.
LEAF_BREAKS = {'unfold_run', 'chg_leaves', 'split_end', 'split_runs', 'mmp_core_pt_break'}
WRAPPERS = {'size_break', 'pt_break'}
# Callbacks the subtree walk calls (pt_for_each_table's fn).
TABLE_FNS = {'defer_page', 'free_page', 'give_back'}


def breaker(path):
    """The function whose slots a break below path[-1] changes."""
    for c in reversed(path):
        if name(c) not in WRAPPERS:
            return name(c)
    return ''


def callees(t, shared, path):
    out = []
    for c in edges.get(t, []):
        if c == '__indirect_call':
            if name(t).startswith('pt_for_each_table'):
                out += [x for x in size if name(x) in TABLE_FNS]
            elif name(t) == 'mmp_core_pt_run' or (fileof.get(t, '').endswith('core/pt_update.c')
                                                 and name(t) != 'op_init'):  # pt->run
                out += [e for e in engines if is_sh(name(e)) == shared]
            elif not fileof.get(t, '').endswith('core/pt_batch.c') and name(t) not in TABLE_FNS:
                out += hooks  # (pt_batch.c and the table callbacks call the caller's hooks)
        elif c in size:
            out.append(c)
        # else: outside what was compiled (libc's memset, the caller's hooks)
    # The two modes of a table (MMP_PT_SHARED or not) never mix in a call:
    # pt_run_N jumps to mmp_core_pt_run_sh_N (a tail call, no frame of its own left),
    # and a shared call's break never unlinks a subtree (sh_break returns
    # first; unlinked tables are retired at the end instead).
    if re.fullmatch(r'pt_run_(\d|generic)', name(t)):
        out = [c for c in out if not is_sh(name(c))]
    # size_break (a change of size or contiguity) unlinks a table only for
    # try_collapse (a table folded into a block); its other callers' slots,
    # the map_leaves fold among them, are leaves.
    via_size = bool(path) and name(path[-1]) == 'size_break'
    if name(t) == 'pt_break_keep' and (shared or breaker(path) in LEAF_BREAKS or
                                       (via_size and breaker(path) != 'try_collapse')):
        out = [c for c in out if not name(c).startswith('pt_for_each_table')]
    return out


def deepest(t, shared, path=()):
    best, chain = 0, []
    for c in callees(t, shared, path):
        if c in path or c == t:
            continue  # only the over-approximated indirect calls loop
        d, ch = deepest(c, shared, path + (t,))
        if d > best:
            best, chain = d, ch
    return size[t] + best, [t] + chain


fail = 0
big = sorted(((s, t) for t, s in size.items()), reverse=True)
print('largest frames:')
for s, t in big[:8]:
    print('  %5d  %s' % (s, t))
for s, t in big:
    if s > frame_budget:
        print('FAIL: frame of %s is %d bytes (budget %d)' % (t, s, frame_budget))
        fail += 1
print('deepest chain per public call (upper bound), exclusive / MMP_PT_SHARED table:')
for t in sorted(x for x in size if re.match(r'mmp_(pt|lazy)_', x)):
    for shared in (False, True):
        d, chain = deepest(t, shared)
        if shared and not any(is_sh(name(c)) for c in chain):
            continue  # the same in both modes
        print('  %5d  %s%s: %s' % (d, t, ' (shared)' if shared else '',
                                   ' > '.join('%s %d' % (name(c), size[c]) for c in chain)))
        if d > chain_budget:
            print('FAIL: %s may use %d bytes of stack (budget %d)' % (t, d, chain_budget))
            fail += 1
sys.exit(1 if fail else 0)
