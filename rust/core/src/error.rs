//! One error type for the engine. torch's phrases are defined here once, so the binding and the
//! cargo tests see the same text.

use std::any::Any;
use std::fmt;

/// Phrase of the error raised when saved values are unpacked after release.
pub const SECOND_BACKWARD: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// Phrase of the error raised when root `i` of a backward is in no graph:
/// `element {i} of tensors {ROOT_WITHOUT_GRAD}`.
pub const ROOT_WITHOUT_GRAD: &str = "does not require grad and does not have a grad_fn";

/// Phrase of the error raised when an input of `autograd.grad` is in no graph.
pub const INPUT_WITHOUT_GRAD: &str = "One of the differentiated Tensors does not require grad";

/// Key phrase of the error raised when a saved tensor was modified in place before backward.
pub const MODIFIED_INPLACE: &str =
    "one of the variables needed for gradient computation has been modified by an inplace operation";

pub enum Error {
    /// Saved values were released by an earlier backward without `retain_graph`.
    SecondBackward,
    /// A saved tensor's version moved on between the forward and the backward.
    ModifiedInplace {
        /// torch's description of the tensor, e.g. `torch.FloatTensor [3]`.
        tensor: String,
        output_nr: usize,
        /// The node whose output the tensor is (its grad_fn); empty for a leaf, whose message
        /// then names no node, as torch's.
        node: String,
        version: u32,
        expected: u32,
        /// Where the tensor was saved and written (Note [Version provenance]), appended to
        /// torch's message; empty when nothing was recorded.
        detail: String,
    },
    /// Any other engine error, raised as RuntimeError with this message.
    Runtime(String),
    /// An error raised by the value type or a hook (e.g. a Python exception), passed through as is.
    Foreign(Box<dyn Any + Send>),
}

/// A node's name as torch's error messages print it: without a trailing `Backward` and its
/// number (`MulBackward0` is `Mul`, `MyFnBackward` is `MyFn`); other names as they are.
pub fn short_node_name(name: &str) -> &str {
    let digits = name.trim_end_matches(|c: char| c.is_ascii_digit());
    match digits.strip_suffix("Backward") {
        Some(short) if !short.is_empty() => short,
        _ => name,
    }
}

impl Error {
    pub fn runtime(msg: impl Into<String>) -> Self {
        Error::Runtime(msg.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::SecondBackward => f.write_str(SECOND_BACKWARD),
            Error::ModifiedInplace {
                tensor,
                output_nr,
                node,
                version,
                expected,
                detail,
            } => {
                write!(f, "{MODIFIED_INPLACE}: [{tensor}]")?;
                if !node.is_empty() {
                    let node = short_node_name(node);
                    write!(f, ", which is output {output_nr} of {node},")?;
                }
                write!(
                    f,
                    " is at version {version}; expected version {expected} instead. Hint: "
                )?;
                // torch's two hints: with anomaly mode the forward traceback was just printed
                if crate::grad_mode::is_anomaly_enabled() {
                    f.write_str("the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!")?;
                } else {
                    f.write_str("enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")?;
                }
                f.write_str(detail)
            }
            Error::Runtime(msg) => f.write_str(msg),
            Error::Foreign(_) => f.write_str("error raised by a foreign callback"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    fn modified(node: &str) -> String {
        Error::ModifiedInplace {
            tensor: "torch.FloatTensor [3]".to_string(),
            output_nr: 0,
            node: node.to_string(),
            version: 1,
            expected: 0,
            detail: String::new(),
        }
        .to_string()
    }

    #[test]
    fn modified_inplace_of_non_leaf_names_its_node() {
        assert!(modified("MulBackward0").starts_with(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of Mul, is at version 1; expected version 0 instead."
        ));
    }

    #[test]
    fn node_names_in_messages_drop_the_backward_suffix() {
        assert_eq!(short_node_name("MulBackward0"), "Mul");
        assert_eq!(short_node_name("MyFnBackward"), "MyFn");
        assert_eq!(short_node_name("MyFnBackwardBackward"), "MyFnBackward");
        assert_eq!(
            short_node_name("torch::autograd::CopySlices"),
            "torch::autograd::CopySlices"
        );
        assert_eq!(short_node_name("Backward0"), "Backward0");
    }

    #[test]
    fn modified_inplace_of_leaf_names_no_node() {
        assert!(modified("").starts_with(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]] is at version 1; expected version 0 instead."
        ));
    }
}
