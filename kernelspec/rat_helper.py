# rat-py's helper inside an IPython kernel.
#
# rat-py installs this source as the module `_rat` in sys.modules (never in
# the user's namespace) right after the kernel is ready. After each of
# rat-py's executions a post_run_cell hook puts the variables snapshot into
# the execute_reply's payload; on demand rat-py calls entry points through
# execute_request user_expressions, e.g. `__import__('_rat').inspect(...)`.
# user_expressions return the text/plain repr of the value, so those entry
# points return a _J, whose repr is JSON text.
#
# The kernel may be someone else's (rat-py --existing, a notebook's): the
# hooks act only on executions whose request came from a rat-py that
# installed this helper (the request's header names its session), and are
# no-ops for everyone else's; what they change for a run (the streams'
# flush interval) they give back when it ends; detach() takes everything out
# when the last rat-py leaves. See doc/kernels.md, "What rat-py changes in a
# kernel".
#
# Everything here is bounded, whatever the user's objects do: containers are
# never repr'd whole (reprlib-style limits, no recursion past a few levels),
# big numpy/pandas objects are summarized from their shape, user __repr__,
# __len__ and friends are called under try/except and a time limit, and
# properties are never evaluated while listing children.
import bisect as _bisect
import heapq as _heapq
import itertools as _itertools
import operator as _operator
import json as _json
import reprlib as _reprlib
import signal as _signal
import sys as _sys
import threading as _threading
import time as _time
import types as _types

OVERVIEW_ROWS = 25     # rows in the variables overview
OVERVIEW_VALUE = 80    # chars of a value in the overview
REPR_MAX = 300         # chars of the `= repr` line
CHILD_ROWS = 20        # children listed by inspect
CHILD_VALUE = 60       # chars of a child's value
DOC_MAX = 500          # chars of a docstring
SNAP_TIME = 0.25       # seconds for the overview rows (snap runs after every execution)
INSPECT_TIME = 1.0     # seconds for one inspect()
STREAM_FLUSH = 0.05    # seconds of stdout/stderr that ipykernel sends as one message

# Types whose __repr__ once blew the time limit: never repr'd again in the
# overview (that runs after every execution, so it must stay fast).
_slow_types = set()


class _J(object):
    __slots__ = ("s",)

    def __init__(self, obj):
        self.s = _json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)

    def __repr__(self):
        return self.s


class _Timeout(Exception):
    pass


class _limit(object):
    """Interrupts the body after `seconds` (main thread only: signals).

    The process has one real-time interval timer, which signal.alarm and
    setitimer(ITIMER_REAL) share: the user's own may be armed. It is taken
    over for the body and given back after it, less the time elapsed, with
    the user's SIGALRM handler and interval; if it came due during the body
    (its signal reaches our handler, which then keeps our own limit), it
    fires right after, through the user's handler. Only what this object
    armed is ever cancelled."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        # A handler installed from C (getsignal() is None) could not be put
        # back: then no limit rather than a lost handler.
        self.armed = (_threading.current_thread() is _threading.main_thread()
                      and _signal.getsignal(_signal.SIGALRM) is not None)
        if self.armed:
            self.deadline = _time.monotonic() + self.seconds
            self.user = None      # the user's timer (delay, interval) once taken over
            self.pending = False  # the user's timer came due during the body
            self.done = False
            self.old = _signal.signal(_signal.SIGALRM, self._on_alarm)
            user = _signal.setitimer(_signal.ITIMER_REAL, self.seconds)
            # Read the clock after the timer: the user's is given back late by
            # microseconds, never early.
            self.user_due = _time.monotonic() + user[0] if user[0] > 0 else None
            self.user = user
            if self.user_due is not None and user[0] < self.seconds:
                _signal.setitimer(_signal.ITIMER_REAL, user[0])  # wake at the user's time too
        return self

    def _on_alarm(self, signum, frame):
        if self.done:
            return
        now = _time.monotonic()
        if self.user is not None and now >= self.deadline:
            raise _Timeout()
        # The user's timer (or one armed before ours took over): theirs to
        # handle once the body is done; ours still runs to the deadline.
        self.pending = True
        if self.user is not None:
            _signal.setitimer(_signal.ITIMER_REAL, max(self.deadline - now, 1e-6))

    def __exit__(self, *exc):
        if self.armed:
            self.done = True  # from here on our handler ignores the signal
            try:
                _signal.setitimer(_signal.ITIMER_REAL, 0)
            finally:
                _signal.signal(_signal.SIGALRM, self.old)
                user = self.user or (0.0, 0.0)
                if self.pending or user[0] > 0:
                    left = self.user_due - _time.monotonic() if self.user_due is not None else 0.0
                    _signal.setitimer(_signal.ITIMER_REAL, left if left > 0 and not self.pending else 1e-6,
                                      user[1])
        return False


_ip = None


def _shell():
    """The IPython shell (a singleton: looked up once, since get_ipython
    goes through traitlets and costs microseconds after every run)."""
    global _ip
    if _ip is None:
        from IPython import get_ipython
        _ip = get_ipython()
    return _ip


def _mod_class(modname, clsname):
    """A class from an already imported module, or None (never imports)."""
    m = _sys.modules.get(modname)
    return getattr(m, clsname, None) if m is not None else None


def _np_array():
    return _mod_class("numpy", "ndarray")


def _pd(name):
    return _mod_class("pandas", name)


def _isinst(obj, cls):
    try:
        return cls is not None and isinstance(obj, cls)
    except Exception:
        return False


def _cut(s, n):
    if "\n" in s or "\r" in s:
        s = " ".join(part.strip() for part in s.splitlines())
    return s if len(s) <= n else s[: max(n - 3, 0)] + "..."


def _safe_len(obj):
    try:
        n = len(obj)
        return n if isinstance(n, int) and n >= 0 else None
    except Exception:
        return None


class _Repr(_reprlib.Repr):
    """reprlib with our limits, safe for any object."""

    def __init__(self, width):
        _reprlib.Repr.__init__(self)
        self.maxlevel = 3
        self.maxdict = 8
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = self.maxarray = 10
        self.maxstring = max(width, 20)
        self.maxlong = 40
        self.maxother = max(width, 20)

    def repr1(self, x, level):
        special = _summary(x)
        if special is not None:
            return special
        try:
            return _reprlib.Repr.repr1(self, x, level)
        except _Timeout:
            raise
        except Exception as e:
            return "<repr failed: %s>" % type(e).__name__

    # reprlib sorts dicts and sets before cutting them: O(n log n) on a
    # million keys, and not the order the user sees. Take the first items in
    # iteration order instead.
    def repr_dict(self, x, level):
        n = len(x)
        if n == 0:
            return "{}"
        if level <= 0:
            return "{...}"
        import itertools
        parts = []
        for k in itertools.islice(dict.keys(x), self.maxdict):
            parts.append("%s: %s" % (self.repr1(k, level - 1), self.repr1(dict.__getitem__(x, k), level - 1)))
        if n > self.maxdict:
            parts.append("...")
        return "{%s}" % ", ".join(parts)

    def _repr_iter(self, x, level, left, right, maxn):
        n = len(x)
        if n == 0:
            return left + right if left != "{" else "%s()" % type(x).__name__
        if level <= 0:
            return left + "..." + right
        import itertools
        parts = [self.repr1(v, level - 1) for v in itertools.islice(x, maxn)]
        if n > maxn:
            parts.append("...")
        return left + ", ".join(parts) + right

    def repr_set(self, x, level):
        return self._repr_iter(x, level, "{", "}", self.maxset)

    def repr_frozenset(self, x, level):
        return "frozenset(" + self._repr_iter(x, level, "{", "}", self.maxfrozenset) + ")"

    def repr_instance(self, x, level):
        if id(type(x)) in _slow_types:
            return "<%s object; slow repr>" % type(x).__name__
        try:
            s = repr(x)
        except _Timeout:
            raise
        except Exception as e:
            return "<%s object; repr failed: %s>" % (type(x).__name__, type(e).__name__)
        if not isinstance(s, str):
            return "<%s object>" % type(x).__name__
        return s if len(s) <= self.maxother else s[: self.maxother - 3] + "..."


def _summary(x):
    """A bounded one-line form for objects whose repr is big or costly."""
    nd = _np_array()
    if _isinst(x, nd):
        try:
            if x.size <= 20:
                return _cut(repr(x), 200)
            import numpy
            with numpy.printoptions(threshold=10, edgeitems=3, linewidth=10 ** 6):
                return _cut(repr(x), 200)
        except Exception:
            return "<ndarray>"
    df = _pd("DataFrame")
    if _isinst(x, df):
        try:
            cols = ", ".join(str(c) for c in list(x.columns[:8]))
            more = ", ..." if x.shape[1] > 8 else ""
            return "<DataFrame %d rows × %d cols: %s%s>" % (x.shape[0], x.shape[1], cols, more)
        except Exception:
            return "<DataFrame>"
    se = _pd("Series")
    if _isinst(x, se):
        try:
            head = ", ".join(_cut(repr(v), 20) for v in list(x.iloc[:5]))
            more = ", ..." if len(x) > 5 else ""
            return "<Series %d rows, %s: %s%s>" % (len(x), x.dtype, head, more)
        except Exception:
            return "<Series>"
    return None


_reprs = {}
# Exact types whose repr is bounded and fast, and whose value cannot change
# under the same object (the overview reuses their rows: _cached_rows).
_SCALARS = frozenset((int, float, bool, complex, str, bytes, type(None)))


def _value(x, width):
    r = _reprs.get(width)
    if r is None:
        r = _reprs[width] = _Repr(width)
    try:
        return _cut(r.repr(x), width)
    except _Timeout:
        raise
    except Exception as e:
        return "<repr failed: %s>" % type(e).__name__


def _size(x):
    """('(3 items)' style size, is_container) for the header/type column."""
    nd = _np_array()
    if _isinst(x, nd):
        try:
            return "%s %s" % (x.dtype, tuple(x.shape)), True
        except Exception:
            return None, True
    if _isinst(x, _pd("DataFrame")):
        try:
            return "(%d rows × %d cols)" % x.shape, True
        except Exception:
            return None, True
    if _isinst(x, _pd("Series")):
        try:
            return "(%d rows, %s)" % (len(x), x.dtype), True
        except Exception:
            return None, True
    if isinstance(x, (str, bytes, bytearray)):
        n = len(x)
        return "(%d %s)" % (n, "chars" if isinstance(x, str) else "bytes"), False
    if isinstance(x, (dict, list, tuple, set, frozenset, range)) or type(x).__name__ == "deque":
        n = _safe_len(x)
        return ("(%d item%s)" % (n, "" if n == 1 else "s")) if n is not None else None, True
    return None, False


def _user_names_full(ip):
    """Names a user would call their variables: what %who shows, minus
    modules, in the namespace's order. The definition the incremental
    tracker below reproduces; it walks the whole namespace (IPython adds
    `_iN`/`_N` entries on every execution, so that grows without bound)."""
    ns = ip.user_ns
    hidden = ip.user_ns_hidden
    mod = _types.ModuleType
    return [k for k, v in list(ns.items())
            if not k.startswith("_") and k not in hidden and not isinstance(v, mod)]


def _anchor_key(k):
    """Whether the tracker may anchor on this key object: an `_iN` or `_N`
    key (IPython inserts those, formatting a fresh string) that is not the
    interned string, so code that names it (`_i5 = ...`, exec) inserts a
    different object. (Interning an equal copy only tells whether k is the
    interned one; the copy is freed with its last reference.)"""
    return (type(k) is str and k[:1] == "_" and (k[1:].isdigit() or (k[1:2] == "i" and k[2:].isdigit()))
            and _sys.intern(k[:1] + k[1:]) is not k)


class _Tracker(object):
    """The user's names, kept up to date at a cost that does not grow with
    the session: (their count, the OVERVIEW_ROWS smallest) exactly as
    _user_names_full + heapq.nsmallest would give them.

    It keeps every str key of user_ns that does not start with "_" (hidden
    names and modules included: whether a name is hidden or a module can
    change without the key moving, so that is decided at each overview) in
    a set and a sorted list. Between two overviews it learns what changed
    from the dict's insertion order alone:
      - the anchor is an `_iN`/`_N` key object seen last time, held by
        identity: IPython formats those strings, so code that deletes the
        entry and assigns the name again inserts a different (interned)
        object, and the walk below does not find it (a key that is already
        the interned string is never an anchor: see _anchor_key);
      - keys inserted since are exactly those after the anchor (a new key
        goes to the end; reassigning an existing key does not move it), so
        walking reversed(ns) back to the anchor finds them, at a cost of
        what was added since (plus the few keys that were already after the
        anchor last time, which are re-checked);
      - a key before the anchor can only have been deleted: the count of
        keys before the anchor (len(ns) minus the walk) says whether one
        was, and then the set drops what is no longer in ns (O(user names),
        never the `_iN` history);
      - an anchor that is gone, a new namespace dict, or keys that are not
        plain str (where the full definition's own rules, even its errors,
        must apply) make it fall back to the full scan.
    Each overview then costs O(new keys + user names): the hidden test walks
    the hidden names; the module test is one C-level pass, over the values
    of the whole namespace while it is mostly user names (_module_keys),
    else over the user's names' values.
    The one sequence it cannot see: code that takes IPython's own key object
    out of globals(), deletes the entry and re-inserts that very object,
    with as many other deletions as insertions in between. Deliberate
    tampering, not use; the next `%reset` or a new kernel rescans."""

    def __init__(self):
        self.ns = None        # the dict tracked (user_ns can be replaced)
        self.anchor = None    # a key object of ns (see above), or None: rescan
        self.len = 0          # len(ns) at the last update
        self.tail = ()        # those of them that are in self.names
        self.names = set()    # str keys of ns not starting with "_"
        self.sorted = []      # self.names, sorted
        self.values = None    # itemgetter of self.sorted's values (None: make it again)
        self.after_keys = []  # every key after the anchor at the last update, newest first
        self.stable = False   # no key of ns was deleted between the last two updates
        self.fresh = []       # then: the keys appended in between, newest first
        self.prev_len = 0     # then: len(ns) at the update before
        self.mods = None      # [(position in ns, key)] of the module values at the last
                              # overview that took the values pass (None: not known)

    def _rescan(self, ns):
        keys = list(ns)       # one C-level copy: atomic under the GIL
        if any(type(k) is not str for k in keys):
            self.ns = None    # not tracked: the full definition applies
            return False
        self.names = set(k for k in keys if not k.startswith("_"))
        self.sorted = sorted(self.names)
        self.values = None
        self.ns, self.len, self.anchor, self.tail = ns, len(keys), None, ()
        self.after_keys, self.stable, self.fresh = [], False, []
        tail = []
        for i in range(len(keys) - 1, -1, -1):
            k = keys[i]
            if _anchor_key(k):
                self.anchor, self.tail = k, tail
                self.after_keys = keys[:i:-1]
                break
            if k in self.names:
                tail.append(k)
        return True

    def _add(self, k):
        if k not in self.names:
            self.names.add(k)
            _bisect.insort(self.sorted, k)
            self.values = None

    def _drop_missing(self, ns, keys):
        for k in keys:
            if k in self.names and k not in ns:
                self.names.discard(k)
                del self.sorted[_bisect.bisect_left(self.sorted, k)]
                self.values = None

    def _update(self, ns):
        """Brings the names up to date with ns; False when ns holds keys
        that are not str (the caller then uses the full scan)."""
        if ns is not self.ns or self.anchor is None:
            return self._rescan(ns)
        anchor = self.anchor
        walked = []
        try:
            for k in reversed(ns):
                if k is anchor:
                    break
                walked.append(k)
            else:
                return self._rescan(ns)
        except RuntimeError:  # another thread changed ns meanwhile
            return self._rescan(ns)
        n = len(ns)
        # No key was deleted since the last update when as many keys as then
        # lead up to the anchor and the keys that followed it then follow it
        # still, the same objects in the same order (new keys go after them).
        old = self.after_keys
        k_new = len(walked) - len(old)
        self.stable = (n - len(walked) == self.len - len(old) and k_new >= 0
                       and all(map(_operator.is_, walked[k_new:], old)))
        self.fresh, self.prev_len = walked[:max(k_new, 0)], self.len
        for k in walked:
            if type(k) is not str:
                self.ns = None   # names added so far go with the rescan this forces
                return False
            if not k.startswith("_"):
                self._add(k)
        # Keys after the anchor last time and not walked now were deleted.
        if self.tail:
            self._drop_missing(ns, self.tail)
        if n - len(walked) != self.len - len(old):
            # Keys before the anchor were deleted (del, %xdel, the output
            # cache's culling of `_N`...): drop those of the user's names.
            self._drop_missing(ns, list(self.sorted))
        self.len = n
        tail = []
        for i, k in enumerate(walked):
            if _anchor_key(k):
                self.anchor, self.tail, self.after_keys = k, tail, walked[:i]
                break
            if not k.startswith("_"):
                tail.append(k)
        else:
            self.tail, self.after_keys = tail, walked
        return True

    def _module_keys(self, ns):
        """The keys of ns whose value is a module (isinstance, as the full
        definition tests it), in ns's order. One C-level pass over the values
        (a byte each), which reads no key: looking each user name up hashes
        its key object, and cold in memory after the user's run that pass
        cost twice as much. The keys of the (few) module positions are the
        last overview's when no key was deleted since (a position below the
        old length is then the same key) or one of the keys appended since;
        else one pass over the keys names them."""
        flags = bytes(map(isinstance, ns.values(), _itertools.repeat(_types.ModuleType)))
        pos = []
        p = flags.find(1)
        while p >= 0:
            pos.append(p)
            p = flags.find(1, p + 1)
        keys = None
        if self.mods is not None and self.stable and len(ns) == self.prev_len + len(self.fresh):
            known, base, fresh = dict(self.mods), self.prev_len, self.fresh
            keys = []
            for p in pos:
                k = fresh[len(fresh) - 1 - (p - base)] if p >= base else known.get(p, _UNSET)
                if k is _UNSET:   # an old name now bound to a module: name them all
                    keys = None
                    break
                keys.append(k)
        if keys is None:
            keys = list(_itertools.compress(ns, flags))
        self.mods = list(zip(pos, keys))
        return keys

    def overview(self, ip):
        """(count of user names, the OVERVIEW_ROWS smallest, sorted)."""
        ns = ip.user_ns
        if not self._update(ns):
            names = _user_names_full(ip)
            return len(names), _heapq.nsmallest(OVERVIEW_ROWS, names)
        hidden = ip.user_ns_hidden
        mod = _types.ModuleType
        get = ns.__getitem__
        mods_known, self.mods = self.mods, None   # only the values pass keeps it
        if len(self.sorted) <= _SMALL:
            # A few names (the usual session): one pass touches less memory
            # than the set, tuple and iterator objects of the C-level paths
            # below, and after the kernel's run that memory is cold: the
            # whole hook takes 14-16 us in the kernel this way against
            # 26-29 (two helpers in one kernel, alternating runs).
            count, todo = 0, []
            for k in self.sorted:
                if k not in hidden and not isinstance(get(k), mod):
                    count += 1
                    if count <= OVERVIEW_ROWS:
                        todo.append(k)
            return count, todo
        # Hidden names: a set intersection that walks the (few) hidden ones.
        if type(hidden) is dict:
            hid = hidden.keys() & self.names
        else:
            hid = set(_itertools.compress(self.sorted, map(hidden.__contains__, self.sorted)))
        if len(ns) <= 2 * len(self.sorted):
            # Mostly user names (10 000 variables and a shorter history):
            # modules from one pass over every value of ns, which costs
            # about 40 % of a lookup of each name's value (both cold).
            self.mods = mods_known
            user_mods = set(k for k in self._module_keys(ns) if k in self.names and k not in hid)
            todo = []
            for k in self.sorted:
                if k not in hid and k not in user_mods:
                    todo.append(k)
                    if len(todo) == OVERVIEW_ROWS:
                        break
            return len(self.sorted) - len(hid) - len(user_mods), todo
        # A long history beside the names: the user's names' values alone,
        # in one C call (an itemgetter made again only when the names
        # change), and one C-level isinstance pass over them.
        values = self.values
        if values is None:
            n = len(self.sorted)
            values = self.values = (_operator.itemgetter(*self.sorted) if n > 1 else
                                    (lambda d, k=self.sorted[0]: (d[k],)) if n == 1 else (lambda d: ()))
        n_mod = sum(map(isinstance, values(ns), _itertools.repeat(mod)))
        n_mod -= sum(1 for k in hid if isinstance(get(k), mod))
        todo = []
        for k in self.sorted:
            if k not in hidden and not isinstance(get(k), mod):
                todo.append(k)
                if len(todo) == OVERVIEW_ROWS:
                    break
        return len(self.sorted) - len(hid) - n_mod, todo


_SMALL = 64   # names up to which overview() takes its one-pass path
_tracker = _Tracker()


def _type_name(x):
    try:
        return type(x).__name__
    except Exception:
        return "?"


def _row(k, v):
    val = _value(v, OVERVIEW_VALUE)
    size, container = _size(v)
    t = _type_name(v)
    # Sizes where they help: always for arrays and frames, and for containers
    # too big to show whole.
    if size and container:
        n = _safe_len(v)
        if (n is not None and n > 8) or _isinst(v, _np_array()) or _isinst(v, _pd("DataFrame")) \
                or _isinst(v, _pd("Series")):
            t = "%s %s" % (t, size)
    # Columns 4-6 are for structured results only (the text shows 1-3):
    # the bare type name, the size, whether look(at=k) has children.
    return [k, t, val, _type_name(v), size, _expandable(v)]


# Rows of the last overview whose value cannot change under the same
# object: name -> (value, row). A _SCALARS value, a str/bytes only up to
# _KEEP_LEN long (so that a big one is not kept alive after the user deletes
# it: entries live until the next overview only).
_row_cache = {}
_KEEP_LEN = 4096


def _cached_rows(ns, count, todo):
    """_rows(ns, count, todo), reusing the rows of unchanged immutable values:
    after `x = 42` the overview's rows are mostly those of the run before,
    and a row (repr, size, type) costs microseconds each, after every run."""
    global _row_cache
    old, new, rows = _row_cache, {}, []
    get = ns.get
    for k in todo:
        v = get(k)
        c = old.get(k)
        if c is not None and c[0] is v:
            new[k] = c
            rows.append(c[1])
            continue
        t = type(v)
        if t not in _SCALARS:
            _row_cache = {}
            return _rows(ns, count, todo)   # the general path, with its time limit
        row = _row(k, v)
        if (t is not str and t is not bytes) or len(v) <= _KEEP_LEN:
            new[k] = (v, row)
        rows.append(row)
    _row_cache = new
    return {"vars": count, "rows": rows}


def _snapshot():
    """The variable count and the overview rows, as a dict."""
    ip = _shell()
    count, todo = _tracker.overview(ip)
    return _cached_rows(ip.user_ns, count, todo)


def _rows(ns, count, todo):
    """The snapshot for `count` user names whose smallest are `todo` (sorted)."""
    out = {"vars": count, "rows": []}
    # Plain scalars and strings have bounded, fast reprs (reprlib slices long
    # strings first): no need to arm the alarm (four system calls) for them.
    if all(type(ns.get(k)) in _SCALARS for k in todo):
        out["rows"] = [_row(k, ns.get(k)) for k in todo]
        return out
    i = 0
    budget = SNAP_TIME
    while i < len(todo):
        k = todo[i]
        try:
            with _limit(budget):
                while i < len(todo):
                    k = todo[i]
                    out["rows"].append(_row(k, ns.get(k)))
                    i += 1
        except _Timeout:
            # Remember the culprit's type so later overviews skip its repr
            # (this runs after every execution), and go on with the rest.
            v = ns.get(k)
            _slow_types.add(id(type(v)))
            out["rows"].append([k, _type_name(v), "<%s object; slow repr>" % _type_name(v)])
            i += 1
            budget = 0.05
    return out


def snap():
    """The snapshot for user_expressions callers (rat-py's silent requests)."""
    return _J(_snapshot())


# The sessions (Jupyter message header "session") of the rat-py connections
# this helper works for, oldest first: the one whose request installed it,
# and those of earlier installs that are still registered (several rat-py
# may share a kernel). A rat-py that crashed stays listed: its session sends
# nothing more, so that costs nobody anything. Bounded.
_OWNERS_MAX = 16
_owners = []


def _request_session():
    """The session of the request being executed now, or None."""
    ip = _shell()
    try:
        parent = ip.get_parent()            # ipykernel 6+: the request message
    except Exception:
        parent = getattr(ip, "parent_header", None)
    if not isinstance(parent, dict):
        return None
    header = parent.get("header", parent)   # a whole message, or its header
    session = header.get("session") if isinstance(header, dict) else None
    return session if isinstance(session, str) and session else None


def _own(session):
    if session and session not in _owners:
        _owners.append(session)
        del _owners[:-_OWNERS_MAX]


def _mine():
    s = _request_session()
    return s is not None and s in _owners


# The streams' flush intervals this helper shortened for the run in progress:
# [(stream, the instance's own value or _UNSET)], given back when it ends.
_UNSET = object()
_shortened = []


def _shorten_streams():
    """ipykernel's stdout and stderr send what was written in their
    flush_interval (0.2 s) as one message, so a tight write loop makes 5-7 MB
    messages, and rat-py holds each whole while it handles it (libzmq hands
    over whole frames; two in flight made a 16 MB peak). A quarter of the
    interval makes them four times smaller (a 3,000,000-line
    sys.stdout.write flood: peak RSS 14 -> 10 MB) and output arrives sooner.
    For rat-py's runs only: _restore_streams gives the kernel's own value
    back when the run ends (other clients' runs keep theirs)."""
    for s in (_sys.stdout, _sys.stderr):
        iv = getattr(s, "flush_interval", None)
        if type(iv) in (int, float) and iv > STREAM_FLUSH:
            try:
                own = s.__dict__.get("flush_interval", _UNSET)
                s.flush_interval = STREAM_FLUSH
                _shortened.append((s, own))
            except Exception:
                pass


def _restore_streams():
    while _shortened:
        s, own = _shortened.pop()
        try:
            if own is _UNSET:
                del s.flush_interval     # the class's default again
            else:
                s.flush_interval = own
        except Exception:
            pass


def _pre_run_cell(info=None):
    """Before every (non-silent) execution: shorter stream messages, for
    rat-py's runs only.

    A cancel's SIGINT can land here: rat-py signals a queued run as soon as
    the kernel takes it (its busy status), and ipykernel's SIGINT handler is
    default_int_handler from pre_handler_hook on. IPython's event trigger
    catches a KeyboardInterrupt in a callback, prints "Error in callback",
    and runs the cell: the cancel would be lost. Caught here, it cuts the
    cell instead (_CellCut), so the code does not run and the run ends in
    KeyboardInterrupt, as an interrupt at its first line would."""
    try:
        _restore_streams()   # a run that never reached post_run_cell
        if _mine():
            _shorten_streams()
    except KeyboardInterrupt:
        _interrupt_cell()


class _CellCut:
    """An IPython AST transformer for one cell, the one whose pre_run_cell
    was interrupted: its body becomes `raise KeyboardInterrupt`. It stays
    in the shell's ast_transformers only until that cell's post_run_cell
    (IPython and ipykernel trigger it in a `finally`) or the last rat-py's
    detach, and leaves any other cell as it is."""

    _rat_hook = True

    def __init__(self, request):
        self.request = request

    def visit(self, node):
        import ast
        body = getattr(node, "body", None)
        if not body or _request_id() != self.request:
            return node
        stmt = ast.Raise(exc=ast.Name(id="KeyboardInterrupt", ctx=ast.Load()), cause=None)
        node.body = [ast.copy_location(stmt, body[0])]
        return node


def _interrupt_cell():
    ip = _shell()
    ts = getattr(ip, "ast_transformers", None)
    if isinstance(ts, list):
        ts.append(_CellCut(_request_id()))


def _uncut_cells(ip=None):
    """Takes every _CellCut out (this install's and earlier ones')."""
    ts = getattr(ip if ip is not None else _shell(), "ast_transformers", None)
    if isinstance(ts, list) and any(getattr(t, "_rat_hook", False) for t in ts):
        ts[:] = [t for t in ts if not getattr(t, "_rat_hook", False)]


def _post_run_cell(result):
    """After every (non-silent) execution of rat-py's: the snapshot rides back
    to rat-py in the execute_reply's payload list. That costs the snapshot
    alone, where a user_expression would also go through IPython's whole
    display formatter (several times the cost), and it comes back after
    errors too. Another client's execution gets nothing: no payload, no
    snapshot taken.

    A cancel's SIGINT that lands here comes after the code ended: it is
    dropped (IPython's trigger would print "Error in callback" into the
    run's output and lose the snapshot) and the work done again, once; all
    of it may be repeated (single=True replaces the payload)."""
    try:
        _after_run(result)
    except KeyboardInterrupt:
        try:
            _after_run(result)
        except KeyboardInterrupt:
            pass


def _after_run(result):
    _uncut_cells()
    _restore_streams()
    if not _mine():
        return
    global _ran
    _ran = (_request_id(), result, None)
    try:
        snapshot = _snapshot()
    except Exception:
        return
    _ran = (_ran[0], result, snapshot)
    global _payloads
    if _payloads is None:
        _payloads = _shell().payload_manager   # a traitlets lookup: once
    _payloads.write_payload({"source": "rat_snapshot", "snapshot": snapshot}, single=True)


# (msg_id, ExecutionResult, snapshot or None) of rat-py's run whose code
# ended last: what rat_guard.py answers with when the kernel loses the reply.
_ran = (None, None, None)


def _request_id():
    try:
        return _shell().get_parent()["header"]["msg_id"]
    except Exception:
        return None


_payloads = None


_pre_run_cell._rat_hook = True
_post_run_cell._rat_hook = True


def _unhook(ip):
    """Takes every rat-py hook out (this install's and earlier ones'),
    returning the owners the earlier ones served."""
    carried = []
    _uncut_cells(ip)
    for event in ("pre_run_cell", "post_run_cell"):
        callbacks = ip.events.callbacks.get(event, [])
        for cb in list(callbacks):
            if getattr(cb, "_rat_hook", False):
                callbacks.remove(cb)
                for o in getattr(cb, "__globals__", {}).get("_owners", ()):
                    if o not in carried:
                        carried.append(o)
                restore = getattr(cb, "__globals__", {}).get("_restore_streams")
                if callable(restore) and restore is not _restore_streams:
                    restore()
    return carried



def _register():
    """Hooks pre_run_cell and post_run_cell once, replacing the hooks of an
    earlier install (a kernel that rat-py attached to before) and keeping
    the sessions they served; the session of the request calling this is
    served from now on too."""
    ip = _shell()
    if ip is None:
        return
    for o in _unhook(ip):
        _own(o)
    _own(_request_session())
    ip.events.register("pre_run_cell", _pre_run_cell)
    ip.events.register("post_run_cell", _post_run_cell)


def detach():
    """A rat-py leaves (run by it, silently): it is served no more; when it
    was the last, every hook goes, the streams are as they were and the
    module `_rat` leaves sys.modules. Nothing else of the kernel's was
    changed (the helper binds no name in the user's namespace)."""
    s = _request_session()
    if s in _owners:
        _owners.remove(s)
    if _owners:
        return _J({"ok": True, "still_serving": len(_owners)})
    _restore_streams()
    ip = _shell()
    if ip is not None:
        _unhook(ip)
        unguard = globals().get("_unguard")   # rat_guard.py's, installed with this
        if unguard is not None:
            unguard(ip)
    m = _sys.modules.get("_rat")
    if m is not None and getattr(m, "__dict__", None) is globals():
        del _sys.modules["_rat"]
    return _J({"ok": True, "still_serving": 0})


# ---------------------------------------------------------------- inspect

def _kind(x):
    import inspect
    if inspect.ismodule(x):
        return "module"
    if inspect.isclass(x):
        return "class"
    if inspect.ismethod(x) or inspect.ismethoddescriptor(x):
        return "method"
    if inspect.isroutine(x) or callable(x) and isinstance(x, (_types.BuiltinFunctionType, _types.FunctionType)):
        return "function"
    return "variable"


def _signature(name, x):
    import inspect
    try:
        return name + str(inspect.signature(x))
    except Exception:
        return None


def _defined_in(x):
    import inspect
    try:
        f = inspect.getsourcefile(x) or inspect.getfile(x)
    except Exception:
        return None
    line = None
    try:
        line = inspect.getsourcelines(x)[1]
    except Exception:
        pass
    ip = _shell()
    try:
        n = ip.compile._filename_map.get(f)
        if n is not None:
            return "exec #%s" % n + (", line %d" % line if line else "")
    except Exception:
        pass
    return f + (":%d" % line if line else "")


def _doc(x):
    import inspect
    try:
        d = inspect.getdoc(x)
    except Exception:
        d = None
    if not d:
        return None
    return d if len(d) <= DOC_MAX else d[: DOC_MAX - 3] + "..."


def _expandable(v):
    if isinstance(v, (dict, list, tuple)) or type(v).__name__ == "deque":
        return _safe_len(v) not in (0, None)
    if _isinst(v, _np_array()):
        try:
            return v.size > 0 and v.ndim >= 1
        except Exception:
            return False
    if _isinst(v, _pd("DataFrame")) or _isinst(v, _pd("Series")):
        return True
    if isinstance(v, (str, bytes, bytearray, int, float, complex, bool, type(None))):
        return False
    if isinstance(v, (_types.ModuleType, type)):
        return True
    if isinstance(v, (_types.FunctionType, _types.BuiltinFunctionType, _types.MethodType)):
        return False
    try:
        d = object.__getattribute__(v, "__dict__")
        return isinstance(d, dict) and len(d) > 0
    except Exception:
        return False


def _child(name, v):
    return [name, _type_name(v), _value(v, CHILD_VALUE), _expandable(v)]


def _children(x):
    """Up to CHILD_ROWS (name, type, value, expandable) rows and the count left out."""
    rows = []
    total = 0
    nd = _np_array()
    if _isinst(x, _pd("DataFrame")):
        total = x.shape[1]
        for c in list(x.columns[:CHILD_ROWS]):
            col = x[c]
            head = ", ".join(_cut(repr(v), 15) for v in list(col.iloc[:4]))
            rows.append([_cut(repr(c), 40), str(col.dtype), _cut("[" + head + (", ...]" if len(col) > 4 else "]"), CHILD_VALUE), True])
    elif _isinst(x, _pd("Series")):
        total = len(x)
        for k, v in zip(list(x.index[:CHILD_ROWS]), list(x.iloc[:CHILD_ROWS])):
            rows.append(_child(_cut(repr(k), 40), v))
    elif _isinst(x, nd):
        if x.ndim == 0:
            return [], 0
        total = x.shape[0]
        for i in range(min(total, CHILD_ROWS)):
            rows.append(_child("[%d]" % i, x[i]))
    elif isinstance(x, dict):
        total = len(x)
        for i, (k, v) in enumerate(dict.items(x)):
            if i >= CHILD_ROWS:
                break
            rows.append(_child(_cut(_Repr(40).repr(k), 40), v))
    elif isinstance(x, (list, tuple)) or type(x).__name__ == "deque":
        total = _safe_len(x) or 0
        for i, v in enumerate(x):
            if i >= CHILD_ROWS:
                break
            rows.append(_child("[%d]" % i, v))
    elif isinstance(x, (str, bytes, bytearray, int, float, complex, bool, set, frozenset, type(None))):
        return [], 0
    else:
        # Attributes from the instance/module/class dict only: __getattr__
        # is never consulted and properties are not evaluated (they can run
        # arbitrary code); they are listed with the value `property`.
        try:
            d = object.__getattribute__(x, "__dict__")
        except Exception:
            d = {}
        items = []
        if isinstance(d, (dict, _types.MappingProxyType)):
            items = [(k, v) for k, v in list(d.items()) if isinstance(k, str) and not k.startswith("_")]
        if not isinstance(x, (type, _types.ModuleType)):
            seen = set(k for k, _ in items)
            for cls in type(x).__mro__[:6]:
                for k, v in list(vars(cls).items()):
                    if isinstance(v, property) and not k.startswith("_") and k not in seen:
                        seen.add(k)
                        items.append((k, v))
        if isinstance(x, _types.ModuleType):
            items.sort(key=lambda kv: kv[0])
        total = len(items)
        for k, v in items[:CHILD_ROWS]:
            if isinstance(v, property):
                rows.append([k, "property", "(not evaluated)", False])
            else:
                rows.append(_child(k, v))
    return rows, max(total - len(rows), 0)


class _NotFound(Exception):
    pass


def _is_int(s):
    try:
        int(s)
        return True
    except (TypeError, ValueError):
        return False


def _step(obj, seg, shown):
    t, v = seg.get("t"), seg.get("v")
    if t in ("key", "index"):
        try:
            return obj[v]
        except Exception:
            raise _NotFound("%s has no %s %r" % (shown, "key" if t == "key" else "index", v))
    # A bare name: key of a mapping, index of a sequence, else attribute.
    if isinstance(obj, dict) or _isinst(obj, _pd("DataFrame")):
        for key in ([v, int(v)] if _is_int(v) else [v]):
            try:
                if isinstance(obj, dict):
                    return dict.__getitem__(obj, key)
                return obj[key]
            except Exception:
                pass
        raise _NotFound("%r is not a key of %s" % (v, shown))
    if _is_int(v) and (isinstance(obj, (list, tuple, str, bytes, range)) or type(obj).__name__ == "deque"
                       or _isinst(obj, _np_array())):
        try:
            return obj[int(v)]
        except Exception:
            raise _NotFound("%s has no index %s" % (shown, v))
    if _isinst(obj, _pd("Series")):
        try:
            return obj[v] if v in obj.index else obj.iloc[int(v)]
        except Exception:
            raise _NotFound("%r is not in the index of %s" % (v, shown))
    try:
        return getattr(obj, v)
    except _Timeout:
        raise
    except Exception:
        pass
    try:
        return obj[int(v) if _is_int(v) else v]
    except Exception:
        raise _NotFound("%s has no attribute or key %r" % (shown, v))


def _path_text(segs):
    out = ""
    for i, s in enumerate(segs):
        t, v = s.get("t"), s.get("v")
        if t == "name":
            out += ("." if i else "") + str(v)
        elif t == "index":
            out += "[%d]" % v
        else:
            out += "[%r]" % (v,)
    return out


def inspect(segs_json):
    """Resolves a path (a JSON list of segments made by rat-py) and describes it."""
    segs = _json.loads(segs_json)
    ip = _shell()
    try:
        with _limit(INSPECT_TIME):
            first = segs[0].get("v")
            shown = _path_text(segs[:1])
            ns = ip.user_ns
            import builtins
            if first in ns:
                obj = ns[first]
            elif hasattr(builtins, str(first)):
                obj = getattr(builtins, first)
            elif first in _sys.modules:
                obj = _sys.modules[first]
            else:
                return _J({"ok": False, "error": "%s: not found" % shown})
            for i, seg in enumerate(segs[1:], 1):
                try:
                    obj = _step(obj, seg, shown)
                except _NotFound as e:
                    return _J({"ok": False, "error": "%s: not found (%s)" % (_path_text(segs[: i + 1]), e)})
                shown = _path_text(segs[: i + 1])
            kind = _kind(obj)
            size, _container = _size(obj)
            out = {"ok": True, "path": shown, "type": _type_name(obj), "kind": kind, "size": size}
            if kind == "variable":
                out["repr"] = _value(obj, REPR_MAX)
            else:
                name = getattr(obj, "__name__", None) if isinstance(getattr(obj, "__name__", None), str) else shown
                if kind != "module":
                    out["signature"] = _signature(name, obj)
                out["defined_in"] = _defined_in(obj)
                out["doc"] = _doc(obj)
            if kind in ("variable", "module", "class"):
                rows, more = _children(obj)
                out["children"] = rows
                out["more"] = more
            return _J(out)
    except _Timeout:
        return _J({"ok": False, "error": "%s: inspecting took longer than %gs (a slow __repr__ or property?)"
                   % (_path_text(segs), INSPECT_TIME)})


_register()
