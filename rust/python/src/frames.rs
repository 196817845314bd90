//! The running thread's Python frames read in place, for a site's walk (Note [Sites]).
//!
//! Note [Frames in place]
//! The C API hands out a frame only as a frame object, which CPython 3.11+ makes on demand: the
//! walk paid for `sys._getframe(1)` on every node, two fifths of a site's cost. The interpreter
//! keeps each running frame in a plain struct (`_PyInterpreterFrame`) linked from the thread
//! state, and its layout is fixed within a minor version, so on the versions listed in
//! `LAYOUTS` the walk reads the code object and instruction pointer straight from it (what
//! profilers such as py-spy read from outside the process).
//!
//! Nothing is trusted on a version's word alone. Before the first read, `calibrate` checks the
//! layout against the C API on the frames running then: the innermost frame's frame object,
//! code object and globals, and its caller's, must be the ones `PyEval_GetFrame`,
//! `PyFrame_GetCode`, `PyEval_GetGlobals` and `PyFrame_GetBack` give, and the code's first
//! instruction is located from `PyFrame_GetLasti`. Any mismatch, or a version not listed,
//! leaves the walk on `sys._getframe` for the life of the process.

use std::os::raw::{c_char, c_int, c_ulong};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;

extern "C" {
    fn PyFrame_GetBack(frame: *mut ffi::PyFrameObject) -> *mut ffi::PyFrameObject;
    fn PyFrame_GetCode(frame: *mut ffi::PyFrameObject) -> *mut ffi::PyObject;
}

/// Byte offsets of the fields the walk reads, for one CPython minor version (64-bit builds),
/// taken from that version's headers (`offsetof`).
struct Layout {
    minor: u32,
    /// from the thread state to the innermost frame: each offset is followed as a pointer
    to_frame: &'static [usize],
    code: usize,
    previous: usize,
    /// `prev_instr` (3.11, 3.12) or `instr_ptr` (3.13): what `PyFrame_GetLasti` counts from
    instr: usize,
    owner: usize,
    frame_obj: usize,
    globals: usize,
}

/// 3.12's frame, which 3.13 keeps (its `f_code` became `f_executable`, `prev_instr` became
/// `instr_ptr`, at the same offsets); only the way from the thread state to it moved.
const LAYOUT_312: Layout = Layout {
    minor: 12,
    // tstate->cframe->current_frame
    to_frame: &[56, 0],
    code: 0,
    previous: 8,
    instr: 56,
    owner: 70,
    frame_obj: 48,
    globals: 24,
};

const LAYOUTS: [Layout; 3] = [
    // tstate->cframe->current_frame
    Layout {
        minor: 11,
        to_frame: &[56, 8],
        code: 32,
        previous: 48,
        instr: 56,
        owner: 69,
        frame_obj: 40,
        globals: 8,
    },
    LAYOUT_312,
    // tstate->current_frame; `code` is `f_executable`, a code object on every frame the walk
    // reads (others are skipped by type)
    Layout {
        minor: 13,
        to_frame: &[72],
        ..LAYOUT_312
    },
];

/// `FRAME_OWNED_BY_CSTACK` (3.12+): the interpreter's shim frame between C and Python code,
/// never a user's line (3.11 has no owner of this value).
const OWNED_BY_CSTACK: c_char = 3;

/// A layout that passed `calibrate`, with what it found.
struct Calibrated {
    layout: &'static Layout,
    /// from a code object's address to its first instruction's, in bytes
    code_start: isize,
    code_type: usize,
}

static CALIBRATED: OnceLock<Option<Calibrated>> = OnceLock::new();
/// The calibrated layout once it passed and while in-place reading is on, else NULL: the one
/// load a site pays before its walk.
static IN_PLACE: AtomicPtr<Calibrated> = AtomicPtr::new(std::ptr::null_mut());
/// Set by the tests to compare the two walks on the same program.
static TURNED_OFF: AtomicBool = AtomicBool::new(false);

/// One running frame: its code object, borrowed from the frame (valid while the frame runs:
/// take a reference before any Python code can run), and `f_lasti`.
pub struct Frame<'a, 'py> {
    pub code: pyo3::Borrowed<'a, 'py, PyAny>,
    pub lasti: i64,
}

/// The running frames, innermost first, read in place; None where the layout is unknown or
/// did not pass its check (the caller takes the C API's way).
#[inline]
pub fn running(py: Python<'_>) -> Option<Frames<'static, '_>> {
    let calibrated = IN_PLACE.load(Ordering::Acquire);
    if calibrated.is_null() {
        return running_undecided(py);
    }
    // SAFETY: IN_PLACE only ever holds a pointer into CALIBRATED, which lives for the process.
    Some(Frames::innermost(py, unsafe { &*calibrated }))
}

#[cold]
#[inline(never)]
fn running_undecided(py: Python<'_>) -> Option<Frames<'static, '_>> {
    if TURNED_OFF.load(Ordering::Relaxed) {
        return None;
    }
    let calibrated = match CALIBRATED.get() {
        Some(c) => c.as_ref()?,
        None => {
            // undecided while no Python frame runs (nothing to check against): asked again
            let decided = calibrate(py)?;
            CALIBRATED.get_or_init(|| decided).as_ref()?
        }
    };
    IN_PLACE.store(
        (calibrated as *const Calibrated).cast_mut(),
        Ordering::Release,
    );
    Some(Frames::innermost(py, calibrated))
}

pub struct Frames<'c, 'py> {
    py: Python<'py>,
    calibrated: &'c Calibrated,
    frame: *const u8,
}

impl<'c, 'py> Frames<'c, 'py> {
    fn innermost(py: Python<'py>, calibrated: &'c Calibrated) -> Self {
        Frames {
            py,
            calibrated,
            // SAFETY: the GIL is held, so the thread state is this thread's and its frames
            // are live; the layout passed `calibrate`.
            frame: unsafe { innermost(calibrated.layout) },
        }
    }
}

impl<'py> Iterator for Frames<'_, 'py> {
    type Item = Frame<'py, 'py>;

    fn next(&mut self) -> Option<Self::Item> {
        let layout = self.calibrated.layout;
        // SAFETY: the GIL is held and the frames are the running thread's, linked by
        // `previous` to a NULL; the offsets passed `calibrate` on this interpreter.
        unsafe {
            while !self.frame.is_null() {
                let frame = self.frame;
                self.frame = read_ptr(frame, layout.previous);
                if *frame.add(layout.owner).cast::<c_char>() == OWNED_BY_CSTACK {
                    continue;
                }
                let code = read_ptr(frame, layout.code) as *mut ffi::PyObject;
                if code.is_null() || ffi::Py_TYPE(code) as usize != self.calibrated.code_type {
                    continue;
                }
                let start = (code as isize) + self.calibrated.code_start;
                let lasti = (read_ptr(frame, layout.instr) as isize) - start;
                if lasti < 0 {
                    // a frame still being set up (its first instruction not run): the C API
                    // skips it too
                    continue;
                }
                return Some(Frame {
                    code: pyo3::Borrowed::from_ptr(self.py, code),
                    lasti: lasti as i64,
                });
            }
        }
        None
    }
}

/// # Safety
/// `base + offset` must hold a pointer.
unsafe fn read_ptr(base: *const u8, offset: usize) -> *const u8 {
    // SAFETY: the caller's.
    unsafe { base.add(offset).cast::<*const u8>().read() }
}

/// The innermost frame (a shim's or an incomplete one included), or NULL.
///
/// # Safety
/// The GIL must be held and `layout` this interpreter's.
unsafe fn innermost(layout: &Layout) -> *const u8 {
    // SAFETY: the caller's; each step reads a pointer the layout names, stopping at NULL.
    unsafe {
        let mut at = ffi::PyThreadState_Get() as *const u8;
        for &offset in layout.to_frame {
            if at.is_null() {
                return at;
            }
            at = read_ptr(at, offset);
        }
        at
    }
}

/// The running interpreter's minor version where it is CPython 3.x with `Py_Version` (3.11+).
/// Only a final release (`PY_RELEASE_LEVEL_FINAL`, 0xF) on a 64-bit build: the layouts are those
/// releases' (alphas and betas moved fields).
fn minor_version() -> Option<u32> {
    if std::mem::size_of::<usize>() != 8 {
        return None;
    }
    let sym = crate::provenance::cpython_symbol(c"Py_Version")?;
    // SAFETY: `Py_Version` is CPython's `const unsigned long`.
    let version = unsafe { sym.cast::<c_ulong>().read() };
    let final_release = (version >> 4) & 0xf == 0xf;
    ((version >> 24) == 3 && final_release).then_some(((version >> 16) & 0xff) as u32)
}

/// Checks the version's layout against the C API on the frames running now (Note [Frames in
/// place]): Some(decision), or None when no Python frame runs to check against.
#[cold]
#[inline(never)]
fn calibrate(py: Python<'_>) -> Option<Option<Calibrated>> {
    let Some(layout) = minor_version().and_then(|m| LAYOUTS.iter().find(|l| l.minor == m)) else {
        return Some(None);
    };
    type GetLasti = unsafe extern "C" fn(*mut ffi::PyFrameObject) -> c_int;
    let Some(get_lasti) = crate::provenance::cpython_symbol(c"PyFrame_GetLasti") else {
        return Some(None);
    };
    // SAFETY: the symbol is CPython's `int PyFrame_GetLasti(PyFrameObject *)`.
    let get_lasti = unsafe { std::mem::transmute::<*mut std::ffi::c_void, GetLasti>(get_lasti) };
    // SAFETY: the GIL is held. The layout is this minor version's; each pointer is checked for
    // NULL before it is followed, and each frame object read through the C API is live (the
    // innermost is held by its running frame, its caller's by the reference owned here).
    unsafe {
        let object = ffi::PyEval_GetFrame();
        if object.is_null() {
            return None;
        }
        let mut frame = innermost(layout);
        while !frame.is_null() && *frame.add(layout.owner).cast::<c_char>() == OWNED_BY_CSTACK {
            frame = read_ptr(frame, layout.previous);
        }
        if frame.is_null() {
            return Some(None);
        }
        let code = PyFrame_GetCode(object);
        let code_type = ffi::Py_TYPE(code) as usize;
        ffi::Py_DECREF(code);
        let lasti = get_lasti(object) as isize;
        let code_start = read_ptr(frame, layout.instr) as isize - lasti - code as isize;
        let candidate = Calibrated {
            layout,
            code_start,
            code_type,
        };
        let agrees = |frame: *const u8, object: *mut ffi::PyFrameObject| -> bool {
            let code = PyFrame_GetCode(object);
            let same = read_ptr(frame, layout.frame_obj) == object as *const u8
                && read_ptr(frame, layout.code) == code as *const u8
                && read_ptr(frame, layout.instr) as isize - code as isize - code_start
                    == get_lasti(object) as isize;
            ffi::Py_DECREF(code);
            same
        };
        let globals = ffi::PyEval_GetGlobals() as *const u8;
        let mut ok = (0..4096).contains(&code_start)
            && agrees(frame, object)
            && read_ptr(frame, layout.globals) == globals;
        if ok {
            let back = PyFrame_GetBack(object);
            let Some(caller) = (Frames {
                py,
                calibrated: &candidate,
                frame: read_ptr(frame, layout.previous),
            })
            .next() else {
                ok = back.is_null();
                if !back.is_null() {
                    ffi::Py_DECREF(back.cast());
                }
                return decide(ok, candidate);
            };
            ok = !back.is_null() && {
                let code = PyFrame_GetCode(back);
                let same =
                    caller.code.as_ptr() == code && i64::from(get_lasti(back)) == caller.lasti;
                ffi::Py_DECREF(code);
                same
            };
            if !back.is_null() {
                ffi::Py_DECREF(back.cast());
            }
        }
        decide(ok, candidate)
    }
}

/// A check that failed may have met a frame still being set up (a finalizer's op run by an
/// allocation in a frame's prologue, which the C API skips): asked again a few times before
/// in-place reading is turned off for good.
fn decide(ok: bool, candidate: Calibrated) -> Option<Option<Calibrated>> {
    static FAILED: AtomicU32 = AtomicU32::new(0);
    if ok {
        Some(Some(candidate))
    } else if FAILED.fetch_add(1, Ordering::Relaxed) < 8 {
        None
    } else {
        Some(None)
    }
}

/// Whether a site's walk reads frames in place (runs the check if it has not run); with
/// `enabled`, first turns in-place reading on or off (the tests compare the two walks).
#[pyfunction]
#[pyo3(signature = (enabled=None))]
pub fn _frames_in_place(py: Python<'_>, enabled: Option<bool>) -> bool {
    if let Some(on) = enabled {
        TURNED_OFF.store(!on, Ordering::Relaxed);
        // published again by the next walk when on
        IN_PLACE.store(std::ptr::null_mut(), Ordering::Release);
    }
    running(py).is_some()
}
