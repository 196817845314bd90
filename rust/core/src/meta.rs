//! A tensor's autograd meta as enums, and the view and creation rules that read them.
//!
//! The binding's tensor carries a `CreationMeta` (how a view was made) and an `Inference` state
//! (whether it is an inference tensor); every rule that follows from them is here, tested
//! without Python: what a new view inherits, what `detach()` gives, when a view's history may be
//! remade after an in-place op, which in-place ops, saves and version reads are refused, and
//! torch's messages for the refusals. Python sees `CreationMeta` as torch's integers
//! (`_core.CREATION_*`, `TensorBase._creation_meta`); the binding converts at its edge.
//!
//! Note [Inference tensors]
//! A tensor made while inference mode is on is an inference tensor, as torch's: it can never be
//! saved for backward, and outside inference mode it cannot be written in place, asked for its
//! version or made to require grad. Its views are inference tensors too. torch lets `detach()`
//! and `.data` of one be written and versioned outside inference mode while still reporting
//! `is_inference()`: those are `Inference::Alias`. A view made in inference mode of a normal
//! tensor is not an inference tensor but carries `CreationMeta::InferenceMode`: like a no_grad
//! view it has no edge to its base, and an in-place op on it (or on its base, seen through it)
//! in normal mode is refused.

use crate::error::short_node_name;

/// torch's CreationMeta: how a view was made, which decides what an in-place op on it (or on
/// its base, seen through it) may do. The discriminants are torch's (`IN_CUSTOM_FUNCTION`, 1, is
/// not used: a custom Function's views are recorded as its outputs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CreationMeta {
    /// Made with grad mode on (or not a view): it follows in-place ops on its base.
    #[default]
    Default = 0,
    /// One of several views one function returned (unbind, split): no in-place op on it.
    MultiOutputNode = 2,
    /// Made in no_grad mode (or a view of such a view): no edge to its base.
    NoGradMode = 3,
    /// Made in inference mode (or a view of such a view): no edge to its base.
    InferenceMode = 4,
}

/// What a view whose base moved on (an in-place op on the base or on another view of it) must
/// do before its `grad_fn` is read. See `CreationMeta::on_stale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaleView {
    /// Nothing to follow: neither the view nor its base is in a graph.
    Keep,
    /// Remake the view's history from its base (torch's AsStridedBackward0 over the base's).
    Regenerate,
    /// torch refuses: the view cannot follow its base (`view_mode_message`).
    Refuse,
}

impl CreationMeta {
    /// torch's integer for this value (what `_creation_meta` and `_core.CREATION_*` show).
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The value torch's integer `code` stands for.
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(CreationMeta::Default),
            2 => Some(CreationMeta::MultiOutputNode),
            3 => Some(CreationMeta::NoGradMode),
            4 => Some(CreationMeta::InferenceMode),
            _ => None,
        }
    }

    /// torch's propagate_creation_meta: the CreationMeta of a new view of a tensor whose own is
    /// `inherited` (`Default` for a tensor that is not a view). Made with grad mode on it keeps
    /// its base's; otherwise it is a no_grad view, or an inference-mode view when inference mode
    /// is on or its base was already one.
    pub fn of_new_view(inherited: Self, grad_enabled: bool, inference_mode: bool) -> Self {
        if grad_enabled {
            inherited
        } else if inherited == CreationMeta::InferenceMode || inference_mode {
            CreationMeta::InferenceMode
        } else {
            CreationMeta::NoGradMode
        }
    }

    /// `of_new_view` under this thread's grad mode and inference mode.
    pub fn of_new_view_now(inherited: Self) -> Self {
        Self::of_new_view(
            inherited,
            crate::grad_mode::is_grad_enabled(),
            crate::grad_mode::is_inference_mode_enabled(),
        )
    }

    /// Made in no_grad or inference mode: the view has no edge to its base (it requires grad
    /// through its base, as a leaf without an accumulator).
    pub fn is_mode_view(self) -> bool {
        matches!(self, CreationMeta::NoGradMode | CreationMeta::InferenceMode)
    }

    /// Whether an in-place op may rewrite this view's history (only a `Default` view can).
    pub fn allows_inplace(self) -> bool {
        self == CreationMeta::Default
    }

    /// What a view made with this value returns with others from one function (unbind, split)
    /// becomes: `MultiOutputNode`, unless it was made in no_grad or inference mode.
    pub fn as_multi_output(self) -> Self {
        match self {
            CreationMeta::Default => CreationMeta::MultiOutputNode,
            other => other,
        }
    }

    /// torch's VariableHooks::grad_fn for a view whose shared version moved past the one its
    /// history was set at: `in_graph` says whether the view has a grad_fn or its base requires
    /// grad.
    pub fn on_stale(self, in_graph: bool) -> StaleView {
        if !in_graph {
            StaleView::Keep
        } else if self.allows_inplace() {
            StaleView::Regenerate
        } else {
            StaleView::Refuse
        }
    }
}

/// Whether a tensor is an inference tensor. See Note [Inference tensors].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Inference {
    /// A normal tensor.
    #[default]
    Normal = 0,
    /// Made in inference mode (or a view of such a tensor).
    Tensor = 1,
    /// `detach()` or `.data` of an inference tensor made outside inference mode: reports
    /// `is_inference()` but may be written and versioned.
    Alias = 2,
}

/// torch's refusal of an in-place op on an inference tensor outside inference mode.
pub const INFERENCE_INPLACE: &str = "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.";

/// torch's refusal to save an inference tensor for backward.
pub const INFERENCE_SAVED: &str = "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.";

/// torch's refusal to read an inference tensor's version.
pub const INFERENCE_VERSION: &str = "Inference tensors do not track version counter.";

/// torch's refusal to make an inference tensor require grad outside inference mode.
pub const INFERENCE_REQUIRES_GRAD: &str =
    "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.";

impl Inference {
    /// A tensor made now: an inference tensor when inference mode is on.
    pub fn at_creation(inference_mode: bool) -> Self {
        if inference_mode {
            Inference::Tensor
        } else {
            Inference::Normal
        }
    }

    /// `at_creation` under this thread's inference mode.
    pub fn now() -> Self {
        Self::at_creation(crate::grad_mode::is_inference_mode_enabled())
    }

    /// A view of a tensor in state `self`: a view is an inference tensor when what it views is
    /// one, whatever the mode it is made in.
    pub fn of_view(self) -> Self {
        self
    }

    /// `detach()` (or `.data`) of a tensor in state `self`, the new tensor being `made` (as
    /// `at_creation` gives it): made outside inference mode from an inference tensor it is an
    /// alias.
    pub fn of_detach(self, made: Self) -> Self {
        if self != Inference::Normal && made == Inference::Normal {
            Inference::Alias
        } else {
            made
        }
    }

    /// torch's `is_inference()`.
    pub fn is_inference(self) -> bool {
        self != Inference::Normal
    }

    /// An in-place op on the tensor, with inference mode `inference_mode`: refused (with torch's
    /// message) for an inference tensor outside inference mode.
    pub fn check_inplace(self, inference_mode: bool) -> Result<(), &'static str> {
        if self == Inference::Tensor && !inference_mode {
            Err(INFERENCE_INPLACE)
        } else {
            Ok(())
        }
    }

    /// Saving the tensor for backward: refused for any inference tensor.
    pub fn check_savable(self) -> Result<(), &'static str> {
        if self.is_inference() {
            Err(INFERENCE_SAVED)
        } else {
            Ok(())
        }
    }

    /// Reading the tensor's version: an inference tensor has none.
    pub fn check_version(self) -> Result<(), &'static str> {
        if self == Inference::Tensor {
            Err(INFERENCE_VERSION)
        } else {
            Ok(())
        }
    }

    /// `requires_grad = value` with inference mode `inference_mode`: an inference tensor may
    /// start requiring grad only inside inference mode.
    pub fn check_requires_grad(
        self,
        value: bool,
        inference_mode: bool,
    ) -> Result<(), &'static str> {
        if value && self == Inference::Tensor && !inference_mode {
            Err(INFERENCE_REQUIRES_GRAD)
        } else {
            Ok(())
        }
    }
}

/// What was modified in place, as torch's view-mode refusal words it.
pub const MODIFIED_THIS: &str = "is being";
/// ... when the base or another view of it was written and the view is read after.
pub const MODIFIED_BASE: &str = "its base or another view of its base has been";

const INFERENCE_VIEW_HINT: &str = " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";

const NO_GRAD_VIEW_HINT: &str = " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";

/// A view as torch's view-mode refusal describes it.
#[derive(Clone, Copy, Debug)]
pub struct ViewRef<'a> {
    pub creation: CreationMeta,
    /// The name of the view's grad_fn (`AsStridedBackward0`), if it has one.
    pub grad_fn: Option<&'a str>,
    pub output_nr: usize,
    /// Which of several views one function returned this is (`MultiOutputNode`).
    pub multi_output_nr: u32,
}

/// torch's refusal of an in-place op on a view made in no_grad or inference mode (or on a view
/// of one), or returned with others by one function, or on its base seen through it;
/// `modified` is `MODIFIED_THIS` or `MODIFIED_BASE`.
pub fn view_mode_message(view: ViewRef<'_>, modified: &str) -> String {
    if view.creation == CreationMeta::MultiOutputNode {
        let (nr, name) = match view.grad_fn {
            Some(f) => (
                view.multi_output_nr as usize + view.output_nr,
                short_node_name(f),
            ),
            None => (view.output_nr, ""),
        };
        return format!(
            "Output {nr} of {name} is a view and {modified} modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
        );
    }
    let prefix = match view.grad_fn {
        Some(f) => format!(
            "Output {} of {} is a view of a view which was created in",
            view.output_nr,
            short_node_name(f)
        ),
        None => "A view was created in".to_string(),
    };
    if view.creation == CreationMeta::InferenceMode {
        format!("{prefix} inference mode and {modified} modified inplace in normal mode.{INFERENCE_VIEW_HINT}")
    } else {
        format!("{prefix} no_grad mode and {modified} modified inplace with grad mode enabled.{NO_GRAD_VIEW_HINT}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CreationMeta; 4] = [
        CreationMeta::Default,
        CreationMeta::MultiOutputNode,
        CreationMeta::NoGradMode,
        CreationMeta::InferenceMode,
    ];

    #[test]
    fn creation_meta_codes_are_torchs_and_round_trip() {
        let codes: Vec<u8> = ALL.iter().map(|c| c.code()).collect();
        assert_eq!(codes, [0, 2, 3, 4]);
        for c in ALL {
            assert_eq!(CreationMeta::from_code(c.code()), Some(c));
        }
        assert_eq!(CreationMeta::from_code(1), None);
        assert_eq!(CreationMeta::from_code(5), None);
    }

    #[test]
    fn a_view_made_with_grad_mode_on_keeps_what_it_inherits() {
        for c in ALL {
            assert_eq!(CreationMeta::of_new_view(c, true, false), c);
        }
    }

    #[test]
    fn a_view_made_in_no_grad_mode_is_a_no_grad_view() {
        for c in [
            CreationMeta::Default,
            CreationMeta::MultiOutputNode,
            CreationMeta::NoGradMode,
        ] {
            assert_eq!(
                CreationMeta::of_new_view(c, false, false),
                CreationMeta::NoGradMode
            );
        }
    }

    #[test]
    fn inference_mode_views_stay_inference_mode_views() {
        for c in ALL {
            assert_eq!(
                CreationMeta::of_new_view(c, false, true),
                CreationMeta::InferenceMode
            );
        }
        assert_eq!(
            CreationMeta::of_new_view(CreationMeta::InferenceMode, false, false),
            CreationMeta::InferenceMode
        );
    }

    #[test]
    fn of_new_view_now_reads_the_threads_modes() {
        let before = crate::grad_mode::set_grad_enabled(false);
        let made = CreationMeta::of_new_view_now(CreationMeta::Default);
        crate::grad_mode::set_grad_enabled(true);
        let made_on = CreationMeta::of_new_view_now(CreationMeta::NoGradMode);
        crate::grad_mode::set_grad_enabled(before);
        assert_eq!(made, CreationMeta::NoGradMode);
        assert_eq!(made_on, CreationMeta::NoGradMode);
    }

    #[test]
    fn only_no_grad_and_inference_views_have_no_edge_to_their_base() {
        let mode: Vec<bool> = ALL.iter().map(|c| c.is_mode_view()).collect();
        assert_eq!(mode, [false, false, true, true]);
    }

    #[test]
    fn only_a_default_view_becomes_a_multi_output_view() {
        let made: Vec<CreationMeta> = ALL.iter().map(|c| c.as_multi_output()).collect();
        assert_eq!(
            made,
            [
                CreationMeta::MultiOutputNode,
                CreationMeta::MultiOutputNode,
                CreationMeta::NoGradMode,
                CreationMeta::InferenceMode
            ]
        );
    }

    #[test]
    fn a_stale_view_in_a_graph_is_regenerated_only_when_default() {
        let on: Vec<StaleView> = ALL.iter().map(|c| c.on_stale(true)).collect();
        assert_eq!(
            on,
            [
                StaleView::Regenerate,
                StaleView::Refuse,
                StaleView::Refuse,
                StaleView::Refuse
            ]
        );
        assert!(ALL.iter().all(|c| c.on_stale(false) == StaleView::Keep));
    }

    #[test]
    fn inference_state_of_made_viewed_and_detached_tensors() {
        assert_eq!(Inference::at_creation(true), Inference::Tensor);
        assert_eq!(Inference::at_creation(false), Inference::Normal);
        for s in [Inference::Normal, Inference::Tensor, Inference::Alias] {
            assert_eq!(s.of_view(), s);
        }
        // detach() outside inference mode of an inference tensor (or alias) is an alias
        assert_eq!(
            Inference::Tensor.of_detach(Inference::Normal),
            Inference::Alias
        );
        assert_eq!(
            Inference::Alias.of_detach(Inference::Normal),
            Inference::Alias
        );
        assert_eq!(
            Inference::Normal.of_detach(Inference::Normal),
            Inference::Normal
        );
        // inside inference mode it is an inference tensor, whatever it detaches
        assert_eq!(
            Inference::Normal.of_detach(Inference::Tensor),
            Inference::Tensor
        );
        assert_eq!(
            Inference::Tensor.of_detach(Inference::Tensor),
            Inference::Tensor
        );
    }

    #[test]
    fn what_an_inference_tensor_refuses() {
        let t = Inference::Tensor;
        assert_eq!(t.check_inplace(false), Err(INFERENCE_INPLACE));
        assert_eq!(t.check_inplace(true), Ok(()));
        assert_eq!(t.check_savable(), Err(INFERENCE_SAVED));
        assert_eq!(t.check_version(), Err(INFERENCE_VERSION));
        assert_eq!(
            t.check_requires_grad(true, false),
            Err(INFERENCE_REQUIRES_GRAD)
        );
        assert_eq!(t.check_requires_grad(true, true), Ok(()));
        assert_eq!(t.check_requires_grad(false, false), Ok(()));
        assert!(t.is_inference());

        let a = Inference::Alias;
        assert!(a.is_inference());
        assert_eq!(a.check_inplace(false), Ok(()));
        assert_eq!(a.check_version(), Ok(()));
        assert_eq!(a.check_savable(), Err(INFERENCE_SAVED));
        assert_eq!(a.check_requires_grad(true, false), Ok(()));

        let n = Inference::Normal;
        assert!(!n.is_inference());
        assert_eq!(n.check_inplace(false), Ok(()));
        assert_eq!(n.check_savable(), Ok(()));
        assert_eq!(n.check_version(), Ok(()));
    }

    fn view(creation: CreationMeta, grad_fn: Option<&str>) -> ViewRef<'_> {
        ViewRef {
            creation,
            grad_fn,
            output_nr: 0,
            multi_output_nr: 1,
        }
    }

    #[test]
    fn view_mode_messages_are_torchs() {
        let m = view_mode_message(view(CreationMeta::NoGradMode, None), MODIFIED_THIS);
        assert!(m.starts_with(
            "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
        ));
        assert!(m.contains("inside the no_grad block"));

        let m = view_mode_message(
            view(CreationMeta::InferenceMode, Some("AsStridedBackward0")),
            MODIFIED_BASE,
        );
        assert!(m.starts_with(
            "Output 0 of AsStrided is a view of a view which was created in inference mode and its base or another view of its base has been modified inplace in normal mode."
        ));
        assert!(m.contains("inside the inference_mode block"));

        let m = view_mode_message(
            view(CreationMeta::MultiOutputNode, Some("UnbindBackward0")),
            MODIFIED_THIS,
        );
        assert!(m.starts_with(
            "Output 1 of Unbind is a view and is being modified inplace. This view is the output of a function that returns multiple views."
        ));
    }
}
