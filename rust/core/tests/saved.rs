//! Saved values: version checks, release after backward, `keep_graph`; storage accounting.

mod common;

use std::sync::Arc;

use common::*;
use rustgrad_core::error::{MODIFIED_INPLACE, SECOND_BACKWARD};
use rustgrad_core::{
    storage, Edge, Engine, Error, ExecuteOptions, NodeRef, SavedTensor, SavedVariables, Storage,
    VersionCounter,
};

fn saved_mul(factor: f64, version: &Arc<VersionCounter>, x: &Leaf<f64>) -> Arc<SavedMul> {
    SavedMul::new(
        SavedVariables::new(vec![SavedTensor::new(factor, version.clone(), 0)]),
        &[&x.node],
    )
}

#[test]
fn saved_tensor_with_unchanged_version_unpacks_value() {
    let version = VersionCounter::new();
    version.bump();
    let saved = SavedTensor::new(2.5, version.clone(), 0);

    assert_eq!(saved.saved_version(), 1);
    assert_eq!(*saved.value(), 2.5);
    assert_eq!(
        saved.unpack("MulBackward0", |_| unreachable!()).unwrap(),
        2.5
    );
}

#[test]
fn saved_tensor_bumped_after_save_fails_unpack_with_modified_inplace() {
    let version = VersionCounter::new();
    let saved = SavedTensor::new(2.5, version.clone(), 1);
    assert_eq!(version.bump(), 1);

    let err = saved
        .unpack("MulBackward0", |v| format!("torch.DoubleTensor [{v}]"))
        .unwrap_err();

    match &err {
        Error::ModifiedInplace {
            tensor,
            output_nr,
            node,
            version,
            expected,
            ..
        } => {
            assert_eq!(tensor, "torch.DoubleTensor [2.5]");
            assert_eq!(*output_nr, 1);
            assert_eq!(node, "MulBackward0");
            assert_eq!(*version, 1);
            assert_eq!(*expected, 0);
        }
        other => panic!("expected ModifiedInplace, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.starts_with(MODIFIED_INPLACE), "{msg}");
    assert!(msg.contains("modified by an inplace operation"), "{msg}");
    assert!(msg.contains("is at version 1; expected version 0"), "{msg}");
    assert!(
        msg.contains("[torch.DoubleTensor [2.5]], which is output 1 of Mul,"),
        "{msg}"
    );
}

#[test]
fn saved_tensor_modified_inplace_fails_backward_naming_the_node() {
    let version = VersionCounter::new();
    let x = Leaf::new("x", None);
    let m = saved_mul(3.0, &version, &x);
    version.bump();
    version.bump();
    let root: NodeRef<f64> = m.clone();

    let err = backward(&root, 1.0).unwrap_err();

    assert!(
        matches!(&err, Error::ModifiedInplace { node, version: 2, expected: 0, .. } if node == "MulBackward0"),
        "{err}"
    );
    assert!(err
        .to_string()
        .contains("is at version 2; expected version 0"));
    assert_eq!(x.grad(), None);
}

#[test]
fn saved_variables_unpack_all_reports_first_modified_value() {
    let v0 = VersionCounter::new();
    let v1 = VersionCounter::new();
    let saved = SavedVariables::new(vec![
        SavedTensor::new(2.0, v0.clone(), 0),
        SavedTensor::new(3.0, v1.clone(), 0),
    ]);
    assert_eq!(
        saved.unpack_all("N", |_| String::new()).unwrap(),
        [2.0, 3.0]
    );

    v1.bump();

    let err = saved.unpack_all("N", |v| v.to_string()).unwrap_err();
    assert!(
        matches!(&err, Error::ModifiedInplace { tensor, version: 1, expected: 0, .. } if tensor == "3"),
        "{err}"
    );
}

#[test]
fn second_backward_after_release_errors_with_second_backward() {
    let version = VersionCounter::new();
    let x = Leaf::new("x", None);
    let m = saved_mul(3.0, &version, &x);
    let root: NodeRef<f64> = m.clone();

    backward(&root, 1.0).unwrap();
    assert_eq!(x.grad(), Some(3.0));
    assert!(m.saved.is_released());

    let err = backward(&root, 1.0).unwrap_err();
    assert!(matches!(err, Error::SecondBackward), "{err}");
    assert_eq!(err.to_string(), SECOND_BACKWARD);
    assert!(err
        .to_string()
        .contains("backward through the graph a second time"));
    assert_eq!(
        x.grad(),
        Some(3.0),
        "the failed backward accumulated nothing"
    );
}

#[test]
fn keep_graph_allows_second_backward_and_gradients_accumulate() {
    let version = VersionCounter::new();
    let x = Leaf::new("x", None);
    let m = saved_mul(3.0, &version, &x);
    let root: NodeRef<f64> = m.clone();
    let keep = || ExecuteOptions {
        keep_graph: true,
        ..Default::default()
    };

    Engine::execute(vec![Edge::new(root.clone(), 0)], vec![1.0], keep()).unwrap();
    assert!(!m.saved.is_released());
    Engine::execute(vec![Edge::new(root.clone(), 0)], vec![2.0], keep()).unwrap();
    assert!(!m.saved.is_released());
    // A last backward without keep_graph still works, and frees the saved values.
    backward(&root, 10.0).unwrap();

    assert_eq!(x.grad(), Some(3.0 + 6.0 + 30.0));
    assert!(m.saved.is_released());
    assert!(matches!(
        backward(&root, 1.0).unwrap_err(),
        Error::SecondBackward
    ));
}

#[test]
fn autograd_grad_without_keep_graph_also_releases() {
    let version = VersionCounter::new();
    let x = Leaf::new("x", None);
    let m = saved_mul(3.0, &version, &x);
    let root: NodeRef<f64> = m.clone();
    let grad = || {
        Engine::execute(
            vec![Edge::new(root.clone(), 0)],
            vec![1.0],
            ExecuteOptions {
                inputs: vec![x.edge()],
                accumulate_grad: false,
                ..Default::default()
            },
        )
    };

    assert_eq!(grad().unwrap(), [Some(3.0)]);
    assert!(matches!(grad().unwrap_err(), Error::SecondBackward));
    assert_eq!(x.grad(), None);
}

#[test]
fn release_frees_saved_values() {
    let value = Arc::new(7.0_f64);
    let saved = SavedVariables::new(vec![SavedTensor::new(
        value.clone(),
        VersionCounter::new(),
        0,
    )]);
    assert_eq!(Arc::strong_count(&value), 2);
    let mut visited = 0;
    saved.for_each(|_| visited += 1);
    assert_eq!(visited, 1);

    saved.release();
    saved.release();

    assert!(saved.is_released());
    assert_eq!(Arc::strong_count(&value), 1);
    saved.for_each(|_| visited += 1);
    assert_eq!(visited, 1);
    assert!(matches!(
        saved.unpack_all("N", |_| String::new()).unwrap_err(),
        Error::SecondBackward
    ));
}

#[test]
fn dropping_saved_variables_frees_saved_values() {
    let value = Arc::new(7.0_f64);
    let saved = SavedVariables::new(vec![SavedTensor::new(
        value.clone(),
        VersionCounter::new(),
        0,
    )]);

    drop(saved);

    assert_eq!(Arc::strong_count(&value), 1);
}

#[test]
fn storage_new_counts_live_storage_until_dropped() {
    // Device slot 16 is used by no other test, so the counts are exact even in parallel.
    const DEVICE: usize = 16;
    let before = storage::live(DEVICE);

    let s = Storage::new(DEVICE, 100);
    assert_eq!((s.device(), s.nbytes()), (DEVICE, 100));
    assert_eq!(storage::live(DEVICE), (before.0 + 1, before.1 + 100));

    // A view shares the storage: no new count.
    let view = s.clone();
    assert_eq!(storage::live(DEVICE), (before.0 + 1, before.1 + 100));
    let t = Storage::new(DEVICE, 28);
    assert_eq!(storage::live(DEVICE), (before.0 + 2, before.1 + 128));

    drop(s);
    assert_eq!(storage::live(DEVICE), (before.0 + 2, before.1 + 128));
    drop(view);
    assert_eq!(storage::live(DEVICE), (before.0 + 1, before.1 + 28));
    drop(t);
    assert_eq!(storage::live(DEVICE), before);
}

#[test]
fn rebased_saved_value_follows_the_new_counter_from_its_current_version() {
    let out = VersionCounter::new();
    let other = VersionCounter::new();
    let target = VersionCounter::new();
    target.bump();
    let saved = SavedVariables::new(vec![
        SavedTensor::new(1.0, out.clone(), 0),
        SavedTensor::new(2.0, other.clone(), 0),
    ]);
    saved.rebase_version(&out, &target, |v| *v += 10.0);

    // the first value now tracks `target` at version 1 (and was changed); the second is as it was
    assert_eq!(
        saved.unpack_all("PowBackward1", |_| String::new()).unwrap(),
        vec![11.0, 2.0]
    );
    out.bump(); // the old counter no longer matters
    assert!(saved.unpack_all("PowBackward1", |_| String::new()).is_ok());
    target.bump();
    let err = saved
        .unpack_all("PowBackward1", |_| "t".into())
        .unwrap_err();
    assert!(err.to_string().contains(MODIFIED_INPLACE));
}

#[test]
fn version_counter_logs_the_last_bumps_with_their_sites() {
    use rustgrad_core::version::LOG_LEN;
    let v = VersionCounter::new();
    v.bump(); // unlogged bumps count but leave no entry
    for i in 0..(LOG_LEN + 2) {
        v.bump_logged(std::sync::Arc::new(format!("write {i}")));
    }
    let log = v.log();
    assert_eq!(v.current(), LOG_LEN as u32 + 3);
    assert_eq!(log.len(), LOG_LEN);
    let first = log[0].1.downcast_ref::<String>().unwrap();
    assert_eq!((log[0].0, first.as_str()), (4, "write 2"));
    assert_eq!(log.last().unwrap().0, LOG_LEN as u32 + 3);
}

// ---- unpack_all describes a modified value outside the lock ------------------------------------
// (the description is built by foreign code, a formatter that may run the garbage collector)

#[test]
fn unpack_all_describes_a_modified_value_outside_the_lock() {
    let version = VersionCounter::new();
    let saved = Arc::new(SavedVariables::new(vec![
        SavedTensor::new(1.0, VersionCounter::new(), 0),
        SavedTensor::new(2.0, version.clone(), 1),
    ]));
    version.bump();

    let inner = saved.clone();
    let err = saved
        .unpack_all("MulBackward0", |v| {
            // Deadlocked before: `describe` ran with the saved values locked.
            let mut n = 0;
            inner.for_each(|_| n += 1);
            assert_eq!(n, 2);
            assert!(!inner.is_released());
            format!("value {v}")
        })
        .unwrap_err();

    match err {
        Error::ModifiedInplace {
            tensor,
            output_nr,
            node,
            version,
            expected,
            ..
        } => {
            assert_eq!(
                (tensor.as_str(), output_nr, node.as_str(), version, expected),
                ("value 2", 1, "MulBackward0", 1, 0)
            );
        }
        other => panic!("expected ModifiedInplace, got {other}"),
    }
}

#[test]
fn unpack_all_of_unchanged_values_returns_them_in_order() {
    let saved = SavedVariables::new(vec![
        SavedTensor::new(1.0, VersionCounter::new(), 0),
        SavedTensor::new(2.0, VersionCounter::new(), 0),
    ]);

    assert_eq!(
        saved.unpack_all("X", |_| unreachable!()).unwrap(),
        [1.0, 2.0]
    );
}
