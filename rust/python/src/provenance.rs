//! Where things happened, for the explainability tools (`rustgrad.explain`, `who_gets_grad`,
//! `memory_report`, `trace_hooks`, the provenance in "modified by an inplace operation").
//!
//! Note [Sites]
//! A site is the user's line: the first Python frame outside the rustgrad package when an op
//! ran. Capturing one walks the running frames, read in place where the interpreter's layout is
//! known (Note [Frames in place] in frames.rs) and through the C API elsewhere, and keeps only
//! the code object and the frame's instruction offset (`f_lasti`); the line number, names and
//! file are worked out from the code object when a report asks (the line table is scanned then,
//! not at every op), so a site costs one reference and no string work. Through the C API, the
//! op wrapper a node is recorded from is skipped without making its frame object
//! (`start_frame`). Whether a code object
//! belongs to the package is decided once per code object (a process-wide map holding it, so
//! its address is not reused, behind a direct-mapped memo of the last answers).
//! The outermost package frame passed on the way is kept too: it is the entry point the user
//! called (`add_`, `SGD.step`), which names the op of a version bump.
//!
//! Sites are always taken for version bumps (in-place ops are few) and for cuts (`detach()`,
//! `.data`, ops under no_grad on tensors that require grad); for every recorded node while node
//! provenance is on (`set_provenance`, on by default: about 2% of the small-tensor forward
//! chain's instructions with frames read in place) or cheap anomaly mode is.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyString, PyTuple, PyWeakrefReference};
use rustgrad_core::{AddressHasher, Node};

use crate::py_value::PyGrad;
use crate::tensor::PyTensor;

extern "C" {
    // Stable since CPython 3.9, outside the limited API's headers until 3.10/3.11.
    fn PyFrame_GetBack(frame: *mut ffi::PyFrameObject) -> *mut ffi::PyFrameObject;
    fn PyFrame_GetCode(frame: *mut ffi::PyFrameObject) -> *mut ffi::PyObject;
}

static PACKAGE_DIR: OnceLock<String> = OnceLock::new();
static NODE_SITES: AtomicBool = AtomicBool::new(true);
static STRICT_DATA: AtomicBool = AtomicBool::new(false);
static TRACING: AtomicBool = AtomicBool::new(false);
static TRACER: Mutex<Option<Py<PyAny>>> = Mutex::new(None);

// code objects are keyed by address (rustgrad_core's AddressHasher: far cheaper than SipHash)
type InternalCache = HashMap<usize, (Py<PyAny>, bool), BuildHasherDefault<AddressHasher>>;

/// Code objects and globals `INTERNAL` holds before it starts again.
const MAX_KNOWN: usize = 1 << 16;

/// Slots of the memo in front of `INTERNAL` (a power of two): wide enough that the few code
/// objects a loop's ops run through rarely share one.
const MEMO_BITS: u32 = 8;

// Code objects and module globals dicts by address, each held for the life of the process so
// its address is not reused. Shared by all threads: asked only on a memo miss.
static INTERNAL: Mutex<Option<InternalCache>> = Mutex::new(None);
// The last answers by address, direct-mapped, each slot the address with the answer in its low
// bit (objects are aligned): a site asks twice per node (the op wrapper's code, the user's),
// and a hash map's probe behind a thread-local was a third of a site's cost. Only addresses
// `INTERNAL` holds are stored, so a slot never names a reused address.
static MEMO: [AtomicUsize; 1 << MEMO_BITS] = [const { AtomicUsize::new(0) }; 1 << MEMO_BITS];

thread_local! {
    static SCOPES: RefCell<Vec<Py<PyAny>>> = const { RefCell::new(Vec::new()) };
}

/// Package frames that only pass a call on (a module's call machinery): never the op's name.
const DISPATCHERS: [&str; 3] = [
    "Module._call_impl",
    "Module.__call__",
    "Module._wrapped_call_impl",
];

/// A user's line (Note [Sites]). Three words, held inline by every node when provenance is on
/// (a box of its own was a malloc and a free per node).
pub struct Site {
    code: Py<PyAny>,
    /// `f_lasti`: the byte offset of the instruction running in the user's frame.
    lasti: i64,
    /// The rustgrad frames on the way out, innermost first, when kept (a version bump's): the
    /// outermost one with a plain name (not a closure's `f.<locals>.g`, not a module's call
    /// machinery) is what the user called.
    entries: Option<Box<Vec<Py<PyAny>>>>,
}

/// How a tensor was cut from a graph: by `detach()`, `.data`, or an op under no_grad or
/// inference mode on inputs that required grad. `sources` are what it was cut from (grad_fns
/// and leaves), held weakly so the cut never keeps a graph or a parameter alive; a cut made
/// from tensors that were themselves cut carries their sources too (at most `MAX_SOURCES`).
pub struct Cut {
    pub kind: &'static str,
    pub site: Option<Site>,
    pub sources: Vec<Source>,
}

/// A node's inputs that were cut from a graph: (input slot, cut); boxed, as most nodes have
/// none.
pub type NodeCuts = Option<Box<Vec<(usize, Arc<Cut>)>>>;

pub enum Source {
    Node(Weak<dyn Node<PyGrad>>),
    Leaf(Py<PyWeakrefReference>),
}

const MAX_SOURCES: usize = 256;

/// Whether `obj` (a code object, or a module's globals) belongs to the package: the file
/// `file_of` reads from it is under the package directory. Decided once per object.
fn in_package(
    obj: &Bound<'_, PyAny>,
    file_of: impl FnOnce(&Bound<'_, PyAny>) -> Option<String>,
) -> bool {
    let key = obj.as_ptr() as usize;
    // Fibonacci hashing: the product's top bits mix every bit of the address
    let slot = &MEMO[(key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize >> (64 - MEMO_BITS)];
    let memo = slot.load(Ordering::Relaxed);
    if memo & !1 == key {
        return memo & 1 == 1;
    }
    in_package_slow(obj, key, slot, file_of)
}

#[cold]
#[inline(never)]
fn in_package_slow(
    obj: &Bound<'_, PyAny>,
    key: usize,
    slot: &AtomicUsize,
    file_of: impl FnOnce(&Bound<'_, PyAny>) -> Option<String>,
) -> bool {
    let lookup = |map: &mut Option<InternalCache>| -> Option<bool> {
        map.get_or_insert_with(InternalCache::default)
            .get(&key)
            .map(|(_, known)| *known)
    };
    let known = lookup(&mut INTERNAL.lock().unwrap_or_else(|e| e.into_inner()));
    let internal = known.unwrap_or_else(|| {
        // no Python runs under the lock (it could switch threads while the lock is held)
        let internal = PACKAGE_DIR
            .get()
            .is_some_and(|dir| file_of(obj).is_some_and(|f| f.starts_with(dir.as_str())));
        let held = obj.clone().unbind();
        let mut map = INTERNAL.lock().unwrap_or_else(|e| e.into_inner());
        let full = map.as_ref().is_some_and(|m| m.len() >= MAX_KNOWN);
        // code made again and again (exec, notebook cells) would grow the map without end:
        // when full, the memo forgets every address before the map lets its objects go
        let dropped = if full {
            for slot in &MEMO {
                slot.store(0, Ordering::Relaxed);
            }
            map.take()
        } else {
            None
        };
        let internal = map
            .get_or_insert_with(InternalCache::default)
            .entry(key)
            .or_insert((held, internal))
            .1;
        drop(map);
        // released outside the lock: a release can run Python code (finalizers)
        drop(dropped);
        internal
    });
    slot.store(key | usize::from(internal), Ordering::Relaxed);
    internal
}

fn is_internal(py: Python<'_>, code: &Bound<'_, PyAny>) -> bool {
    in_package(code, |c| {
        c.getattr(pyo3::intern!(py, "co_filename"))
            .and_then(|f| f.extract::<String>())
            .ok()
    })
}

/// The user's line now, or None when no user frame is on the stack; `keep_entries`: keep the
/// package frames passed on the way (only a version bump needs them, to name its op).
pub fn capture(py: Python<'_>, keep_entries: bool) -> Option<Site> {
    if let Some(mut frames) = crate::frames::running(py) {
        if !keep_entries {
            return frames.find(|f| !is_internal(py, &f.code)).map(|f| Site {
                code: f.code.to_owned().unbind(),
                lasti: f.lasti,
                entries: None,
            });
        }
        let mut entries = Vec::new();
        for frame in frames {
            if !is_internal(py, &frame.code) {
                return Some(Site {
                    code: frame.code.to_owned().unbind(),
                    lasti: frame.lasti,
                    entries: (!entries.is_empty()).then(|| Box::new(entries)),
                });
            }
            entries.push(frame.code.to_owned().unbind());
        }
        return None;
    }
    // SAFETY: the GIL is held. `start_frame` returns a new reference; PyFrame_GetBack and
    // PyFrame_GetCode new references, each released (or owned by a Bound) below.
    unsafe {
        let mut frame = start_frame(py, keep_entries)?;
        let mut entries = Vec::new();
        loop {
            let code = Bound::from_owned_ptr(py, PyFrame_GetCode(frame));
            if !is_internal(py, &code) {
                let lasti = frame_lasti(py, frame);
                ffi::Py_DECREF(frame.cast());
                return Some(Site {
                    code: code.unbind(),
                    lasti,
                    entries: (!entries.is_empty()).then(|| Box::new(entries)),
                });
            }
            if keep_entries {
                entries.push(code.unbind());
            }
            let back = PyFrame_GetBack(frame);
            ffi::Py_DECREF(frame.cast());
            if back.is_null() {
                return None;
            }
            frame = back;
        }
    }
}

/// The frame the walk starts from, as a new reference. The innermost frame's object is made on
/// demand by CPython 3.11+ (an allocation, and a copy when its call returns), and it is an op
/// wrapper of the package's on nearly every node: when its globals (read without making the
/// object) are a package module's and no entries are kept, the walk starts one frame out,
/// through `sys._getframe(1)`, which makes only the frame it returns.
///
/// # Safety
/// The GIL must be held.
unsafe fn start_frame(py: Python<'_>, keep_entries: bool) -> Option<*mut ffi::PyFrameObject> {
    if !keep_entries && innermost_is_internal(py) {
        let frame = unsafe { frame_one_out(py) };
        if frame.is_null() {
            drop(PyErr::take(py));
            return None;
        }
        return Some(frame.cast());
    }
    // SAFETY: the GIL is held; a borrowed frame, made a new reference here.
    unsafe {
        let frame = ffi::PyEval_GetFrame();
        if frame.is_null() {
            return None;
        }
        ffi::Py_INCREF(frame.cast());
        Some(frame)
    }
}

/// `sys._getframe(1)`: a new reference, or NULL with an exception set (ValueError past the
/// outermost frame). Where `sys._getframe` is a METH_FASTCALL builtin (CPython 3.9+), its C
/// function is called directly, which skips the generic call's dispatch and checks: the call
/// was two fifths of a site's cost.
///
/// # Safety
/// The GIL must be held.
unsafe fn frame_one_out(py: Python<'_>) -> *mut ffi::PyObject {
    type FastCall = unsafe extern "C" fn(
        *mut ffi::PyObject,
        *const *mut ffi::PyObject,
        ffi::Py_ssize_t,
    ) -> *mut ffi::PyObject;
    struct GetFrame {
        function: Py<PyAny>,
        one: Py<PyAny>,
        /// the C function and its `self` (the sys module, which `function` keeps alive)
        fast: Option<(FastCall, usize)>,
    }
    // CPython's flag for the `(self, args, nargs)` signature (stable ABI from 3.10, the same
    // value since 3.7), which pyo3's 3.9 ABI leaves out
    const METH_FASTCALL: std::os::raw::c_int = 0x0080;
    static GETFRAME: GILOnceCell<Option<GetFrame>> = GILOnceCell::new();
    let Some(getframe) = GETFRAME.get_or_init(py, || {
        let function = py.import("sys").ok()?.getattr("_getframe").ok()?;
        let one = 1i32.into_pyobject(py).ok()?.into_any().unbind();
        let f = function.as_ptr();
        // SAFETY: the GIL is held; `f` is checked to be a builtin function before its C
        // function is read, and its flags say the C function takes the fastcall signature.
        let fast = unsafe {
            let builtin = ffi::PyCFunction_Check(f) != 0;
            let fastcall = builtin && ffi::PyCFunction_GetFlags(f) == METH_FASTCALL;
            match (fastcall, ffi::PyCFunction_GetFunction(f)) {
                (true, Some(meth)) => Some((
                    std::mem::transmute::<ffi::PyCFunction, FastCall>(meth),
                    ffi::PyCFunction_GetSelf(f) as usize,
                )),
                _ => None,
            }
        };
        Some(GetFrame {
            function: function.unbind(),
            one,
            fast,
        })
    }) else {
        return std::ptr::null_mut();
    };
    let args = [getframe.one.as_ptr()];
    // SAFETY: the GIL is held; the fastcall C function gets its own `self` and one argument,
    // as CPython's vectorcall of it would pass them.
    unsafe {
        match getframe.fast {
            Some((call, module)) => call(module as *mut ffi::PyObject, args.as_ptr(), 1),
            None => match getframe.function.bind(py).call1((getframe.one.bind(py),)) {
                Ok(frame) => frame.into_ptr(),
                Err(e) => {
                    e.restore(py);
                    std::ptr::null_mut()
                }
            },
        }
    }
}

/// Whether the innermost Python frame runs with a package module's globals (its `__file__`
/// under the package directory), found without making the frame's object.
fn innermost_is_internal(py: Python<'_>) -> bool {
    // SAFETY: the GIL is held; PyEval_GetGlobals returns a borrowed dict or NULL.
    let globals = unsafe { ffi::PyEval_GetGlobals() };
    if globals.is_null() {
        return false;
    }
    // SAFETY: a borrowed reference the frame keeps alive for this call (no count taken on the
    // hot path; the cache takes one on a miss).
    let globals = unsafe { pyo3::Borrowed::from_ptr(py, globals) };
    in_package(&globals, |g| {
        g.downcast::<PyDict>()
            .ok()?
            .get_item("__file__")
            .ok()??
            .extract::<String>()
            .ok()
    })
}

/// `f_lasti` of a frame: `PyFrame_GetLasti` where the interpreter has it (3.11+, looked up
/// once, as the extension is built for 3.9's stable ABI), else the attribute.
///
/// # Safety
/// The GIL must be held and `frame` a live frame.
unsafe fn frame_lasti(py: Python<'_>, frame: *mut ffi::PyFrameObject) -> i64 {
    type GetLasti = unsafe extern "C" fn(*mut ffi::PyFrameObject) -> std::os::raw::c_int;
    static GET_LASTI: OnceLock<Option<GetLasti>> = OnceLock::new();
    // SAFETY: a non-null answer is CPython's `int PyFrame_GetLasti(PyFrameObject *)`.
    let direct = GET_LASTI.get_or_init(|| {
        cpython_symbol(c"PyFrame_GetLasti")
            .map(|sym| unsafe { std::mem::transmute::<*mut std::ffi::c_void, GetLasti>(sym) })
    });
    // SAFETY: the caller's live frame, the GIL held.
    match direct {
        Some(get) => i64::from(unsafe { get(frame) }),
        None => unsafe { Bound::from_borrowed_ptr(py, frame.cast()) }
            .getattr(pyo3::intern!(py, "f_lasti"))
            .and_then(|l| l.extract::<i64>())
            .unwrap_or(-1),
    }
}

/// A function of the running interpreter's C API by name, where the platform can look one up
/// (Linux's dlsym) and this interpreter has it: the extension is built for 3.9's stable ABI,
/// so functions outside it, or newer than 3.9, are found at run time instead of linked.
pub(crate) fn cpython_symbol(name: &std::ffi::CStr) -> Option<*mut std::ffi::c_void> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: dlsym on the process's own symbols, with a NUL-terminated name.
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        (!sym.is_null()).then_some(sym.cast())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = name;
        None
    }
}

fn code_name(code: &Bound<'_, PyAny>) -> String {
    let py = code.py();
    code.getattr(pyo3::intern!(py, "co_qualname"))
        .or_else(|_| code.getattr(pyo3::intern!(py, "co_name")))
        .and_then(|n| n.extract::<String>())
        .unwrap_or_default()
}

impl Site {
    /// The line of the instruction at `lasti`: the last line start at or before it
    /// (`dis.findlinestarts`, the same on every Python version).
    fn line(&self, py: Python<'_>) -> u32 {
        let starts = py
            .import("dis")
            .and_then(|dis| dis.call_method1("findlinestarts", (self.code.bind(py),)));
        let mut line = 0;
        if let Ok(starts) = starts.and_then(|s| s.try_iter()) {
            for item in starts.flatten() {
                let Ok((offset, lineno)) = item.extract::<(i64, Option<u32>)>() else {
                    continue;
                };
                if offset > self.lasti {
                    break;
                }
                if let Some(l) = lineno {
                    line = l;
                }
            }
        }
        line
    }

    /// `(filename, lineno, function)`.
    pub fn to_tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let code = self.code.bind(py);
        let file = code.getattr(pyo3::intern!(py, "co_filename"))?;
        PyTuple::new(
            py,
            [
                file,
                self.line(py).into_pyobject(py)?.into_any(),
                PyString::new(py, &code_name(code)).into_any(),
            ],
        )
    }

    /// The entry point the user called (`add_`, `SGD.step`), or `fallback`.
    pub fn op(&self, py: Python<'_>, fallback: &str) -> String {
        let names: Vec<String> = self
            .entries
            .iter()
            .flat_map(|e| e.iter())
            .map(|c| code_name(c.bind(py)))
            .collect();
        names
            .iter()
            .rev()
            .find(|n| !n.contains("<locals>") && !DISPATCHERS.contains(&n.as_str()))
            .or(names.last())
            .cloned()
            .unwrap_or_else(|| fallback.to_string())
    }

    /// `file:line (in function)` for messages.
    pub fn describe(&self, py: Python<'_>) -> String {
        let code = self.code.bind(py);
        let file = code
            .getattr(pyo3::intern!(py, "co_filename"))
            .and_then(|f| f.extract::<String>())
            .unwrap_or_default();
        format!("{file}:{} (in {})", self.line(py), code_name(code))
    }
}

/// What a bump's op is called when no package frame names it (a write from Rust alone).
const UNNAMED_WRITE: &str = "in-place write";

/// One logged version bump: the user's line (Note [Version provenance]). The op is named when a
/// report asks, from the site's entry frames, not at the write.
pub struct Bump {
    site: Option<Site>,
}

impl Bump {
    fn op(&self, py: Python<'_>) -> String {
        match &self.site {
            Some(s) => s.op(py, UNNAMED_WRITE),
            None => UNNAMED_WRITE.to_string(),
        }
    }
}

/// Bumps `version`, logging the user's line (and the package frames that name the op).
pub fn bump_logged(py: Python<'_>, version: &rustgrad_core::VersionCounter) -> u32 {
    version.bump_logged(Arc::new(Bump {
        site: capture(py, true),
    }))
}

/// `(version, op, filename, lineno, function)` for each logged bump of `version`, oldest first.
pub fn version_history<'py>(
    py: Python<'py>,
    version: &rustgrad_core::VersionCounter,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut rows = Vec::new();
    for (v, entry) in version.log() {
        if let Some(bump) = entry.downcast_ref::<Bump>() {
            let (file, line, func) = match &bump.site {
                Some(s) => {
                    let t = s.to_tuple(py)?;
                    (t.get_item(0)?, t.get_item(1)?, t.get_item(2)?)
                }
                None => (
                    py.None().into_bound(py),
                    py.None().into_bound(py),
                    py.None().into_bound(py),
                ),
            };
            rows.push(PyTuple::new(
                py,
                [
                    v.into_pyobject(py)?.into_any(),
                    PyString::new(py, &bump.op(py)).into_any(),
                    file,
                    line,
                    func,
                ],
            )?);
        }
    }
    PyTuple::new(py, rows)
}

/// The writes that moved `version` past `saved`, for the "modified by an inplace operation"
/// error: `; changed by add_ at t.py:3 (in f) to version 1`.
pub fn writes_since(py: Python<'_>, version: &rustgrad_core::VersionCounter, saved: u32) -> String {
    let mut parts = Vec::new();
    for (v, entry) in version.log() {
        if v <= saved {
            continue;
        }
        if let Some(bump) = entry.downcast_ref::<Bump>() {
            let at = bump
                .site
                .as_ref()
                .map(|s| format!(" at {}", s.describe(py)))
                .unwrap_or_default();
            parts.push(format!("{}{at} (version {v})", bump.op(py)));
        }
    }
    parts.join(", then ")
}

impl Source {
    /// What `t` would pass gradients to: its grad_fn, or itself for a leaf.
    pub fn of(t: &Bound<'_, PyTensor>) -> PyResult<Source> {
        let b = t.try_borrow()?;
        Ok(match &b.grad_fn {
            Some(f) => Source::Node(Arc::downgrade(f)),
            None => {
                drop(b);
                Source::Leaf(PyWeakrefReference::new(t)?.unbind())
            }
        })
    }

    fn same(&self, other: &Source) -> bool {
        match (self, other) {
            (Source::Node(a), Source::Node(b)) => Weak::ptr_eq(a, b),
            (Source::Leaf(a), Source::Leaf(b)) => a.as_ptr() == b.as_ptr(),
            _ => false,
        }
    }

    fn clone_ref(&self, py: Python<'_>) -> Source {
        match self {
            Source::Node(w) => Source::Node(w.clone()),
            Source::Leaf(r) => Source::Leaf(r.clone_ref(py)),
        }
    }

    fn object(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        Ok(match self {
            Source::Node(w) => match w.upgrade() {
                Some(n) => Some(crate::node::handle_for(py, n)?.into_any().unbind()),
                None => None,
            },
            Source::Leaf(r) => r.bind(py).upgrade().map(Bound::unbind),
        })
    }
}

impl Cut {
    /// A cut of `kind` made now from `sources`, plus the sources of `inherited` cuts.
    pub fn now(
        py: Python<'_>,
        kind: &'static str,
        mut sources: Vec<Source>,
        inherited: &[Arc<Cut>],
    ) -> Arc<Cut> {
        for cut in inherited {
            for s in &cut.sources {
                if sources.len() >= MAX_SOURCES {
                    break;
                }
                if !sources.iter().any(|x| x.same(s)) {
                    sources.push(s.clone_ref(py));
                }
            }
        }
        Arc::new(Cut {
            kind,
            site: capture(py, false),
            sources,
        })
    }
}

/// `(filename, lineno, function)` of a site, or None.
pub fn site_object(py: Python<'_>, site: Option<&Site>) -> PyResult<PyObject> {
    Ok(match site {
        Some(s) => s.to_tuple(py)?.into_any().unbind(),
        None => py.None(),
    })
}

/// `(kind, site, sources)` of a cut (the sources still alive: grad_fns and leaf tensors), or
/// None.
pub fn cut_tuple(py: Python<'_>, cut: Option<&Cut>) -> PyResult<PyObject> {
    let Some(cut) = cut else {
        return Ok(py.None());
    };
    let mut sources = Vec::new();
    for s in &cut.sources {
        if let Some(o) = s.object(py)? {
            sources.push(o);
        }
    }
    Ok(PyTuple::new(
        py,
        [
            PyString::new(py, cut.kind).into_any().unbind(),
            site_object(py, cut.site.as_ref())?,
            PyTuple::new(py, sources)?.into_any().unbind(),
        ],
    )?
    .into_any()
    .unbind())
}

/// Whether recording a node takes its site.
pub fn node_sites_enabled() -> bool {
    NODE_SITES.load(Ordering::Relaxed) || rustgrad_core::grad_mode::is_cheap_anomaly_enabled()
}

pub fn strict_data_enabled() -> bool {
    STRICT_DATA.load(Ordering::Relaxed)
}

/// The innermost scope pushed on this thread (an nn.Module's, by its `__call__`).
pub fn current_scope(py: Python<'_>) -> Option<Py<PyAny>> {
    SCOPES.with(|s| s.borrow().last().map(|o| o.clone_ref(py)))
}

/// Calls the hook tracer, if one is set, before a hook runs: `tracer(kind, hook, grads)`.
pub fn trace_hook(
    py: Python<'_>,
    kind: &str,
    hook: &Bound<'_, PyAny>,
    grads: &Bound<'_, PyAny>,
) -> PyResult<()> {
    if !TRACING.load(Ordering::Relaxed) {
        return Ok(());
    }
    let tracer = TRACER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|t| t.clone_ref(py));
    if let Some(tracer) = tracer {
        tracer.bind(py).call1((kind, hook, grads))?;
    }
    Ok(())
}

/// Tells the binding where the rustgrad package lives (Note [Sites]); called once at import.
#[pyfunction]
pub fn _set_package_dir(dir: String) {
    let _ = PACKAGE_DIR.set(dir);
}

/// Turns recording of each node's forward site on or off; returns the previous setting.
#[pyfunction]
pub fn set_provenance(enabled: bool) -> bool {
    NODE_SITES.swap(enabled, Ordering::Relaxed)
}

#[pyfunction]
pub fn is_provenance_enabled() -> bool {
    NODE_SITES.load(Ordering::Relaxed)
}

/// Cheap anomaly mode: node sites on, each node's gradients checked for NaN/Inf in Rust.
#[pyfunction]
pub fn _set_cheap_anomaly(enabled: bool) -> bool {
    rustgrad_core::grad_mode::set_cheap_anomaly(enabled)
}

#[pyfunction]
pub fn _is_cheap_anomaly_enabled() -> bool {
    rustgrad_core::grad_mode::is_cheap_anomaly_enabled()
}

/// The first non-finite kind in a contiguous float buffer: one vectorisable pass per chunk,
/// then a look inside the chunk that has one.
fn scan<T: Copy>(
    values: &[T],
    finite: impl Fn(T) -> bool,
    nan: impl Fn(T) -> bool,
) -> Option<&'static str> {
    for chunk in values.chunks(256) {
        if !chunk.iter().fold(true, |ok, v| ok & finite(*v)) {
            return Some(if chunk.iter().any(|v| nan(*v)) {
                "nan"
            } else {
                "inf"
            });
        }
    }
    None
}

/// `Some("nan" | "inf")` if the NumPy array holds one, None if it holds neither, Err(()) when
/// it is not a contiguous float32/float64 NumPy array (the caller asks Python).
pub fn non_finite_in(array: &Bound<'_, PyAny>) -> Result<Option<&'static str>, ()> {
    use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
    if let Ok(a) = array.downcast::<PyArrayDyn<f32>>() {
        if a.is_contiguous() {
            // SAFETY: read-only view while the GIL is held; no Python code runs meanwhile.
            let s = unsafe { a.as_slice() }.map_err(|_| ())?;
            return Ok(scan(s, f32::is_finite, f32::is_nan));
        }
    } else if let Ok(a) = array.downcast::<PyArrayDyn<f64>>() {
        if a.is_contiguous() {
            // SAFETY: as above.
            let s = unsafe { a.as_slice() }.map_err(|_| ())?;
            return Ok(scan(s, f64::is_finite, f64::is_nan));
        }
    }
    Err(())
}

#[pyfunction]
pub fn set_strict_data(enabled: bool) -> bool {
    STRICT_DATA.swap(enabled, Ordering::Relaxed)
}

#[pyfunction]
pub fn is_strict_data() -> bool {
    STRICT_DATA.load(Ordering::Relaxed)
}

#[pyfunction]
pub fn _push_scope(scope: Py<PyAny>) {
    SCOPES.with(|s| s.borrow_mut().push(scope));
}

#[pyfunction]
pub fn _pop_scope() {
    let popped = SCOPES.with(|s| s.borrow_mut().pop());
    drop(popped);
}

/// Sets (or with None clears) the function called before every hook runs in backward;
/// returns the previous one.
#[pyfunction]
pub fn _set_hook_tracer(py: Python<'_>, tracer: Option<Py<PyAny>>) -> Option<Py<PyAny>> {
    let mut slot = TRACER.lock().unwrap_or_else(|e| e.into_inner());
    TRACING.store(tracer.is_some(), Ordering::Relaxed);
    let prev = std::mem::replace(&mut *slot, tracer);
    drop(slot);
    let _ = py;
    prev
}
