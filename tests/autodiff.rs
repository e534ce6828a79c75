//! The operators on Burn's autodiff devices (Flex and wgpu underneath): ScatterND's gradients
//! against central finite differences, the reductions without a gradient, BitCount and
//! NonZeroCoordinates on tracked tensors, and a few SGD steps through `scatter_nd_update`.

mod common;

use burn::backend::Dispatch;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;
use burn_dml_ops::{DmlOps, OutOfBounds};
use common::*;

/// Flex, wgpu (and NdArray with its feature), each under autodiff.
fn autodiff_devices() -> Vec<Device> {
    #[cfg(feature = "ndarray")]
    #[allow(deprecated)]
    let ndarray = Some(Device::ndarray().autodiff());
    #[cfg(not(feature = "ndarray"))]
    let ndarray = None;
    devices()
        .into_iter()
        .map(|device| device.autodiff())
        .chain(ndarray)
        .collect()
}

fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap()
}

/// One ScatterND case: shapes, index tuples and options, with values derived from a seed.
struct Case {
    input_shape: Vec<usize>,
    indices: Vec<i64>,
    indices_shape: Vec<usize>,
    updates_shape: Vec<usize>,
    options: ScatterNdOptions,
}

/// Deterministic values in about [-2, 2], different for each `salt`.
fn pseudo_random(len: usize, salt: u64) -> Vec<f32> {
    (0..len as u64)
        .map(|i| {
            let x = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xBF58_476D);
            ((x >> 40) % 4001) as f32 / 1000.0 - 2.0
        })
        .collect()
}

/// `loss = sum(weights * scatter(input, updates)^2)`: not linear, so a gradient that ignores
/// where a value went cannot pass.
fn loss<const D: usize, const DI: usize, const DU: usize>(
    case: &Case,
    input: Tensor<D>,
    updates: Tensor<DU>,
    weights: Tensor<D>,
) -> Tensor<1> {
    let device = input.device();
    let indices = Tensor::<DI, Int>::from_data(
        TensorData::new(case.indices.clone(), case.indices_shape.clone()),
        &device,
    );
    let output = input
        .try_scatter_nd(indices, updates, case.options.clone())
        .unwrap();
    (output.clone() * output * weights).sum()
}

/// The analytic gradients on `device` and central differences of the loss, both for the input
/// and the updates, within a tolerance that f32 rounding over a step of 1e-2 allows.
fn check_gradients<const D: usize, const DI: usize, const DU: usize>(case: &Case, device: &Device) {
    let input_len: usize = case.input_shape.iter().product();
    let updates_len: usize = case.updates_shape.iter().product();
    let input_values = pseudo_random(input_len, 1);
    let update_values = pseudo_random(updates_len, 2);
    let weight_values = pseudo_random(input_len, 3);
    let data = |values: &[f32], shape: &[usize]| TensorData::new(values.to_vec(), shape.to_vec());
    let forward = |input: &[f32], updates: &[f32], device: &Device| -> f32 {
        let loss = loss::<D, DI, DU>(
            case,
            Tensor::from_data(data(input, &case.input_shape), device),
            Tensor::from_data(data(updates, &case.updates_shape), device),
            Tensor::from_data(data(&weight_values, &case.input_shape), device),
        );
        values(loss)[0]
    };

    let input = Tensor::<D>::from_data(data(&input_values, &case.input_shape), device);
    let updates = Tensor::<DU>::from_data(data(&update_values, &case.updates_shape), device);
    let weights = Tensor::<D>::from_data(data(&weight_values, &case.input_shape), device);
    let (input, updates) = (input.require_grad(), updates.require_grad());
    let grads = loss::<D, DI, DU>(case, input.clone(), updates.clone(), weights).backward();
    let input_grad = values(input.grad(&grads).expect("the input has a gradient"));
    let updates_grad = values(updates.grad(&grads).expect("the updates have a gradient"));

    // Finite differences on the same device without autodiff.
    let plain = device.clone().inner();
    let eps = 1e-2f32;
    let central = |which: usize, i: usize| {
        let (mut up, mut down) = (
            [input_values.clone(), update_values.clone()],
            [input_values.clone(), update_values.clone()],
        );
        up[which][i] += eps;
        down[which][i] -= eps;
        (forward(&up[0], &up[1], &plain) - forward(&down[0], &down[1], &plain)) / (2.0 * eps)
    };
    for (which, analytic, name) in [(0, &input_grad, "input"), (1, &updates_grad, "updates")] {
        for (i, &a) in analytic.iter().enumerate() {
            let numeric = central(which, i);
            assert!(
                (a - numeric).abs() <= 2e-2 * (1.0 + numeric.abs()),
                "{:?} on {device:?}: d loss / d {name}[{i}] is {a}, finite differences give \
                 {numeric} (input {:?}, indices {:?}, updates {:?})",
                case.options,
                case.input_shape,
                case.indices,
                case.updates_shape,
            );
        }
    }
}

fn options(reduction: Reduction, out_of_bounds: OutOfBounds) -> ScatterNdOptions {
    ScatterNdOptions {
        reduction,
        out_of_bounds,
        ..Default::default()
    }
}

#[test]
fn scatter_nd_gradients_match_finite_differences() {
    for device in autodiff_devices() {
        for out_of_bounds in [OutOfBounds::Skip, OutOfBounds::Clamp] {
            // Unique targets for Assign (with duplicates the winner is unspecified): rows 1 and
            // 3 (as -1), and -9, out of range (skipped, or clamped onto row 0).
            let assign = Case {
                input_shape: vec![4, 3],
                indices: vec![1, -1, -9],
                indices_shape: vec![3, 1],
                updates_shape: vec![3, 3],
                options: options(Reduction::Assign, out_of_bounds),
            };
            check_gradients::<2, 2, 2>(&assign, &device);
            // Add with duplicates, negative and out-of-range tuples, k = 2 of a rank-3 input.
            let add = Case {
                input_shape: vec![3, 2, 2],
                indices: vec![0, 1, 0, 1, -1, 0, 5, 0, 2, -3],
                indices_shape: vec![5, 2],
                updates_shape: vec![5, 2],
                options: options(Reduction::Add, out_of_bounds),
            };
            check_gradients::<3, 2, 2>(&add, &device);
            // Deterministic Assign with duplicates (row 3 as -1, and 1 twice; -9 clamps onto row
            // 0 or is skipped): the latest row of each target wins, so the loss is a function of
            // the updates and only the winners have a gradient.
            let latest = Case {
                input_shape: vec![4, 3],
                indices: vec![1, -1, 3, 1, -9, 0],
                indices_shape: vec![6, 1],
                updates_shape: vec![6, 3],
                options: ScatterNdOptions {
                    deterministic: true,
                    ..options(Reduction::Assign, out_of_bounds)
                },
            };
            check_gradients::<2, 2, 2>(&latest, &device);
            // Deterministic Add: the same gradient as the default.
            let exact = Case {
                options: ScatterNdOptions {
                    deterministic: true,
                    ..add.options.clone()
                },
                ..add
            };
            check_gradients::<3, 2, 2>(&exact, &device);
        }
        // Leading 1s ignored by `input_dims`, and updates with leading 1s.
        let dims = Case {
            input_shape: vec![1, 1, 3, 2],
            indices: vec![2, 0],
            indices_shape: vec![1, 2, 1],
            updates_shape: vec![1, 2, 2],
            options: ScatterNdOptions {
                input_dims: Some(2),
                ..options(Reduction::Assign, OutOfBounds::Skip)
            },
        };
        check_gradients::<4, 3, 3>(&dims, &device);
    }
}

#[test]
fn assign_gradient_zeroes_replaced_elements_and_skips_dropped_rows() {
    for device in autodiff_devices() {
        let input = Tensor::<1>::from_data([1.0, 2.0, 3.0, 4.0], &device).require_grad();
        let updates = Tensor::<1>::from_data([10.0, 20.0, 30.0], &device).require_grad();
        let indices = Tensor::<2, Int>::from_data([[2], [-4], [4]], &device);
        let output = input.clone().scatter_nd_update(indices, updates.clone());
        let scale = Tensor::<1>::from_data([1.0, 2.0, 3.0, 4.0], &device);
        let grads = (output * scale).sum().backward();
        assert_eq!(
            values(input.grad(&grads).unwrap()),
            vec![0.0, 2.0, 0.0, 4.0],
            "{device:?}: elements 0 and 2 were replaced"
        );
        assert_eq!(
            values(updates.grad(&grads).unwrap()),
            vec![3.0, 1.0, 0.0],
            "{device:?}: the third tuple (4) is out of range and skipped"
        );
    }
}

/// Deterministic `Assign`: of duplicate rows only the latest has a gradient, on every device.
#[test]
fn deterministic_assign_gradient_goes_to_the_winning_update() {
    for device in autodiff_devices() {
        let input = Tensor::<1>::from_data([1.0, 2.0, 3.0, 4.0], &device).require_grad();
        let updates =
            Tensor::<1>::from_data([10.0, 20.0, 30.0, 40.0, 50.0], &device).require_grad();
        let indices = Tensor::<2, Int>::from_data([[2], [-2], [0], [0], [7]], &device);
        let options = ScatterNdOptions {
            deterministic: true,
            ..options(Reduction::Assign, OutOfBounds::Skip)
        };
        let output = input
            .clone()
            .try_scatter_nd(indices, updates.clone(), options)
            .unwrap();
        assert_eq!(
            values(output.clone()),
            vec![40.0, 2.0, 20.0, 4.0],
            "{device:?}"
        );
        let scale = Tensor::<1>::from_data([1.0, 2.0, 3.0, 4.0], &device);
        let grads = (output * scale).sum().backward();
        assert_eq!(
            values(input.grad(&grads).unwrap()),
            vec![0.0, 2.0, 0.0, 4.0]
        );
        assert_eq!(
            values(updates.grad(&grads).unwrap()),
            vec![0.0, 3.0, 0.0, 1.0, 0.0],
            "{device:?}: rows 1 (-2) and 3 land; rows 0 and 2 were replaced, row 4 is skipped"
        );
    }
}

#[test]
fn gather_nd_slices_gradient_adds_back_into_the_source() {
    for device in autodiff_devices() {
        let input =
            Tensor::<2>::from_data([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], &device).require_grad();
        let indices = Tensor::<2, Int>::from_data([[2], [0], [2], [7]], &device);
        let gathered = <Dispatch as DmlOps>::float_gather_nd_slices(
            input.clone().into_dispatch(),
            indices.into_dispatch(),
            OutOfBounds::Skip,
            [4, 2].into(),
            2,
        );
        let gathered = Tensor::<2>::from_dispatch(gathered);
        assert_eq!(
            values(gathered.clone()),
            vec![5.0, 6.0, 1.0, 2.0, 5.0, 6.0, 0.0, 0.0],
            "{device:?}: rows 2, 0, 2, then zeros for the skipped tuple"
        );
        let grads = (gathered * 2.0).sum().backward();
        assert_eq!(
            values(input.grad(&grads).unwrap()),
            vec![2.0, 2.0, 0.0, 0.0, 4.0, 4.0],
            "{device:?}: row 2 was gathered twice, row 1 never"
        );
    }
}

#[test]
fn reductions_without_a_gradient_are_errors_on_tracked_operands() {
    for device in autodiff_devices() {
        for reduction in [Reduction::Mul, Reduction::Min, Reduction::Max] {
            let input = Tensor::<1>::from_data([1.0, 2.0, 3.0], &device);
            let updates = Tensor::<1>::from_data([5.0, -1.0], &device);
            let indices = Tensor::<2, Int>::from_data([[0], [2]], &device);
            let options = options(reduction, OutOfBounds::Skip);
            for (input, updates) in [
                (input.clone().require_grad(), updates.clone()),
                (input.clone(), updates.clone().require_grad()),
            ] {
                let err = input
                    .try_scatter_nd(indices.clone(), updates, options.clone())
                    .expect_err("a tracked operand of Mul/Min/Max");
                let message = err.to_string();
                assert!(
                    message.contains(&format!("{reduction:?}")) && message.contains("no gradient"),
                    "{device:?}: {message}"
                );
            }
            // Untracked operands on an autodiff device compute as on the plain device.
            let on_autodiff = values(
                input
                    .clone()
                    .try_scatter_nd(indices.clone(), updates.clone(), options.clone())
                    .unwrap(),
            );
            let expected = values(
                input
                    .inner()
                    .try_scatter_nd(indices.inner(), updates.inner(), options)
                    .unwrap(),
            );
            assert_eq!(on_autodiff, expected, "{device:?} {reduction:?}");
        }
    }
}

#[test]
fn bit_count_and_nonzero_run_on_tracked_tensors() {
    for device in autodiff_devices() {
        let x = Tensor::<2>::from_data([[0.0, 1.5], [-0.0, 3.0]], &device).require_grad();
        let y = x.clone() * 2.0;
        let bits = y.clone().bit_count();
        let plain = Tensor::<2>::from_data([[0.0, 3.0], [-0.0, 6.0]], &device.clone().inner());
        assert_eq!(
            to_i64(&bits.into_data()),
            to_i64(&plain.clone().bit_count().into_data()),
            "{device:?}"
        );
        let found = y.clone().nonzero_coordinates();
        let expected = plain.nonzero_coordinates();
        assert_eq!(
            to_i64(&found.count.into_data()),
            to_i64(&expected.count.into_data()),
            "{device:?}"
        );
        assert_eq!(
            to_i64(&found.coordinates.into_data()),
            to_i64(&expected.coordinates.into_data()),
            "{device:?}"
        );
        // The graph around them still differentiates.
        let grads = y.sum().backward();
        assert_eq!(values(x.grad(&grads).unwrap()), vec![2.0; 4], "{device:?}");
        // Int tensors on an autodiff device.
        let ints = int_tensor::<1>(TensorData::from([0i32, 7, -1]), &device);
        assert_eq!(
            to_i64(&ints.clone().bit_count().into_data()),
            vec![0, 3, 32],
            "{device:?}"
        );
        assert_eq!(
            to_i64(&ints.nonzero_coordinates().count.into_data()),
            vec![2],
            "{device:?}"
        );
    }
}

/// SGD on rows written into a buffer by `scatter_nd_update`: the loss goes down at every step
/// and the rows converge to the targets at their positions (the other positions are not
/// learnable, so the loss keeps their share).
#[test]
fn sgd_through_scatter_nd_reduces_the_loss() {
    for device in autodiff_devices() {
        let target_values = pseudo_random(8 * 4, 7);
        let target = Tensor::<2>::from_data(
            TensorData::new(target_values.clone(), [8, 4]),
            &device.clone().inner(),
        )
        .autodiff();
        let positions = [1usize, 3, 6, 7, 0];
        let indices = Tensor::<2, Int>::from_data([[1], [3], [-2], [7], [0]], &device);
        let mut rows = Tensor::<2>::zeros([5, 4], &device).require_grad();
        let mut losses = Vec::new();
        for _ in 0..20 {
            let buffer = Tensor::<2>::zeros([8, 4], &device);
            let written = buffer.scatter_nd_update(indices.clone(), rows.clone());
            let loss = (written - target.clone()).powi_scalar(2).mean();
            let grads = loss.backward();
            losses.push(values(loss)[0]);
            let grad = rows.grad(&grads).expect("the rows have a gradient");
            // d loss / d row = 2 (row - target) / 32: a rate of 8 halves the error per step.
            rows = (rows.inner() - grad * 8.0).autodiff().require_grad();
        }
        // Strictly down while the error is large, never up once it has converged.
        assert!(
            losses[..6].windows(2).all(|w| w[1] < w[0]) && losses.windows(2).all(|w| w[1] <= w[0]),
            "{device:?}: the loss went {losses:?}"
        );
        let learned = values(rows.inner());
        for (row, &position) in positions.iter().enumerate() {
            for col in 0..4 {
                let (got, want) = (learned[row * 4 + col], target_values[position * 4 + col]);
                assert!(
                    (got - want).abs() < 1e-3,
                    "{device:?}: row {row} col {col} learned {got}, target {want}"
                );
            }
        }
    }
}

/// With no index tuple an `Assign` replaces nothing, so the input's gradient is the output's.
/// On wgpu a one-element input used to get a wrong gradient: the backward pass created zero
/// updates of shape `[0]`, and Burn 0.22.1's Fusion drops one-element elementwise work fused
/// with the creation of a zero-element tensor. The proptest below found it as `shape = [1],
/// picks = []`.
#[test]
fn assign_without_tuples_passes_the_gradient_through() {
    for device in devices().into_iter().map(|device| device.autodiff()) {
        for (shape, value) in [([1usize], 5.0f32), ([3], 2.0)] {
            let n = shape[0];
            let input = Tensor::<1>::from_data(TensorData::new(vec![value; n], shape), &device)
                .require_grad();
            let updates = Tensor::<1>::from_data(TensorData::new(Vec::<f32>::new(), [0]), &device)
                .require_grad();
            let indices =
                Tensor::<2, Int>::from_data(TensorData::new(Vec::<i64>::new(), [0, 1]), &device);
            let weights: Vec<f32> = (0..n).map(|i| 0.25 + i as f32).collect();
            let w = Tensor::<1>::from_data(TensorData::new(weights.clone(), shape), &device);
            let output = input.clone().scatter_nd_update(indices, updates);
            let grads = (output * w).sum().backward();
            let got = values(input.grad(&grads).expect("input gradient"));
            assert_eq!(got, weights, "{device:?} {shape:?}");
        }
    }
}

/// One random gradient case of rank `D`: `loss = sum(weights * scatter(input, updates))`, whose
/// gradients the oracle knows exactly: the input's is `weights` (zeroed at replaced slices for
/// `Assign`), each updates row's is `weights` at its target slice, or zeros when dropped.
fn gradient_case<const D: usize>(
    shape: Vec<usize>,
    (k, tuples, index_dtype): (usize, Vec<i64>, DType),
    reduction: Reduction,
    clamp: bool,
    device: &Device,
) {
    let rows = tuples.len() / k;
    let numel: usize = shape.iter().product();
    let slice: usize = shape[k..].iter().product();
    let strides: Vec<usize> = (0..k).map(|i| shape[i + 1..k].iter().product()).collect();
    let weights = pseudo_random(numel, 11);
    // The updates as rank D: leading 1s, the rows, then the slice's dimensions.
    let mut updates_shape = vec![1; k - 1];
    updates_shape.push(rows);
    updates_shape.extend_from_slice(&shape[k..]);

    let input = Tensor::<D>::from_data(
        TensorData::new(pseudo_random(numel, 12), shape.clone()),
        device,
    )
    .require_grad();
    let updates = Tensor::<D>::from_data(
        TensorData::new(pseudo_random(rows * slice, 13), updates_shape),
        device,
    )
    .require_grad();
    let indices = Tensor::<2, Int>::from_data(
        TensorData::new(tuples.clone(), [rows, k]),
        (device, index_dtype),
    );
    let options = scatter_options(reduction, clamp);
    let output = input
        .clone()
        .try_scatter_nd(indices, updates.clone(), options)
        .unwrap();
    let w = Tensor::<D>::from_data(TensorData::new(weights.clone(), shape.clone()), device);
    let grads = (output * w).sum().backward();

    let mut input_grad = weights.clone();
    let mut updates_grad = vec![0.0f32; rows * slice];
    for (row, tuple) in tuples.chunks(k).enumerate() {
        let target: Option<usize> = tuple
            .iter()
            .zip(&shape)
            .zip(&strides)
            .map(|((&v, &d), &s)| oracle_index(v, d, clamp).map(|c| c * s))
            .sum();
        let Some(target) = target else { continue };
        let range = target * slice..(target + 1) * slice;
        updates_grad[row * slice..(row + 1) * slice].copy_from_slice(&weights[range.clone()]);
        if reduction == Reduction::Assign {
            input_grad[range].fill(0.0);
        }
    }
    let context = format!("{device:?} {shape:?} k={k} {tuples:?} {reduction:?} clamp={clamp}");
    let got_input = values(input.grad(&grads).expect("input gradient"));
    let got_updates = values(updates.grad(&grads).expect("updates gradient"));
    assert_eq!(got_input, input_grad, "input gradient, {context}");
    assert_eq!(got_updates, updates_grad, "updates gradient, {context}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Random shapes (ranks 1 to 8), tuple sizes, policies and index patterns: `Add` with
    /// duplicates and out-of-range tuples, `Assign` with distinct in-range targets (negative
    /// half the time), on Flex and wgpu under autodiff.
    #[test]
    fn random_gradients_match_the_oracle(
        shape in proptest::collection::vec(1usize..=3, 1..=8),
        k_pick in 0usize..8,
        picks in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..12),
        assign in proptest::prelude::any::<bool>(),
        clamp in proptest::prelude::any::<bool>(),
    ) {
        let k = 1 + k_pick % shape.len();
        let dims = &shape[..k];
        let targets: usize = dims.iter().product();
        let tuples: Vec<i64> = if assign {
            // Distinct targets: the first occurrence of each pick, as coordinates.
            let mut seen = std::collections::HashSet::new();
            picks
                .iter()
                .map(|&p| (p as usize % targets, p))
                .filter(|(t, _)| seen.insert(*t))
                .flat_map(|(t, p)| {
                    let mut rest = t;
                    let mut coords = vec![0i64; k];
                    for j in (0..k).rev() {
                        let d = dims[j];
                        let c = (rest % d) as i64;
                        rest /= d;
                        coords[j] = if (p >> j) & 1 == 1 { c - d as i64 } else { c };
                    }
                    coords
                })
                .collect()
        } else {
            picks
                .iter()
                .flat_map(|&p| {
                    (0..k).map(move |j| {
                        let d = dims[j] as i64;
                        ((p >> (8 * j)) % (2 * d as u64 + 2)) as i64 - d - 1
                    })
                })
                .collect()
        };
        let reduction = if assign { Reduction::Assign } else { Reduction::Add };
        for device in devices().into_iter().map(|device| device.autodiff()) {
            with_rank!(
                shape.len(),
                gradient_case(
                    shape.clone(),
                    (k, tuples.clone(), device.settings().int_dtype.into()),
                    reduction,
                    clamp,
                    &device
                )
            );
        }
    }
}

/// 64-bit indices whose low 32 bits are in range but whose value is not (2^32 + 1,
/// -2^32 - 1): the backward pass drops (or clamps) them as the forward pass does, never folds
/// them onto a valid row.
#[test]
fn wide_indices_past_u32_in_the_gradient() {
    let tuples = vec![(1i64 << 32) + 1, 1, -(1i64 << 32) - 1, 2];
    for device in autodiff_devices() {
        if !holds(&device, DType::I64, "wide_indices_past_u32_in_the_gradient") {
            continue;
        }
        for clamp in [false, true] {
            for reduction in [Reduction::Assign, Reduction::Add] {
                gradient_case::<2>(
                    vec![4, 3],
                    (1, tuples.clone(), DType::I64),
                    reduction,
                    clamp,
                    &device,
                );
            }
        }
    }
}

/// `loss = sum(weights * values^2)` over a compress's padded values: each selected element's
/// gradient is `2 * weight * value` at its position, every other position's zero.
fn compress_gradient<const D: usize>(
    device: &Device,
    shape: [usize; D],
    axis: Option<(isize, Vec<bool>)>,
    mask: &[bool],
) {
    let numel: usize = shape.iter().product();
    let x_values = pseudo_random(numel, 3);
    let x = Tensor::<D>::from_data(TensorData::new(x_values.clone(), shape), device).require_grad();
    // Which output position each input position went to, by the oracle's own walk.
    let mut destination = vec![None; numel];
    let out_len;
    let out = match &axis {
        None => {
            let mut r = 0;
            for (p, &keep) in mask.iter().enumerate() {
                if keep {
                    destination[p] = Some(r);
                    r += 1;
                }
            }
            out_len = numel;
            let mask = Tensor::<D, burn::tensor::Bool>::from_data(
                TensorData::new(mask.to_vec(), shape),
                device,
            );
            x.clone().compress(mask).values.reshape([out_len])
        }
        Some((axis, condition)) => {
            let a = axis.rem_euclid(D as isize) as usize;
            let rank_of: Vec<Option<usize>> = condition
                .iter()
                .scan(0, |r, &keep| {
                    *r += usize::from(keep);
                    Some(keep.then(|| *r - 1))
                })
                .collect();
            let mut out_shape = shape;
            out_shape[a] = condition.len();
            out_len = out_shape.iter().product();
            for (p, slot) in destination.iter_mut().enumerate() {
                let mut rest = p;
                let mut coords = [0; D];
                for d in (0..D).rev() {
                    coords[d] = rest % shape[d];
                    rest /= shape[d];
                }
                if let Some(Some(r)) = rank_of.get(coords[a]) {
                    coords[a] = *r;
                    *slot = Some(
                        coords
                            .iter()
                            .zip(&out_shape)
                            .fold(0, |acc, (&c, &d)| acc * d + c),
                    );
                }
            }
            let condition = Tensor::<1, burn::tensor::Bool>::from_data(
                TensorData::new(condition.clone(), [condition.len()]),
                device,
            );
            x.clone()
                .compress_axis(*axis, condition)
                .values
                .reshape([out_len])
        }
    };
    let weights_values = pseudo_random(out_len, 5);
    let weights =
        Tensor::<1>::from_data(TensorData::new(weights_values.clone(), [out_len]), device);
    let grads = (out.powf_scalar(2.0) * weights).sum().backward();
    let gradient = values(x.grad(&grads).expect("the input has a gradient"));
    for (p, g) in gradient.iter().enumerate() {
        let expected = destination[p].map_or(0.0, |r| 2.0 * weights_values[r] * x_values[p]);
        assert!(
            (g - expected).abs() <= 1e-4 * (1.0 + expected.abs()),
            "position {p} of {shape:?} ({axis:?}) on {device:?}: gradient {g}, expected {expected}"
        );
    }
}

#[test]
fn compress_gradients_reach_the_selected_positions() {
    for device in autodiff_devices() {
        let mask: Vec<bool> = (0..24).map(|i| i % 3 != 1).collect();
        compress_gradient(&device, [2, 3, 4], None, &mask);
        compress_gradient(&device, [2, 3, 4], None, &[false; 24]);
        // Every axis, from the front and the end, with conditions shorter than the axis.
        compress_gradient(&device, [2, 3, 4], Some((0, vec![false, true])), &[]);
        compress_gradient(&device, [2, 3, 4], Some((1, vec![true, false])), &[]);
        compress_gradient(
            &device,
            [2, 3, 4],
            Some((-1, vec![true, false, true, true])),
            &[],
        );
        compress_gradient(&device, [5, 2], Some((0, vec![false; 5])), &[]);
        compress_gradient(&device, [5, 2], Some((0, vec![])), &[]);
    }
}

/// A compress of a transposed view: the gradient goes back through the view to the position
/// each selected element came from in the tracked tensor.
#[test]
fn compress_gradients_pass_through_views() {
    for device in autodiff_devices() {
        let x_values = pseudo_random(12, 7);
        let x = Tensor::<2>::from_data(TensorData::new(x_values.clone(), [3, 4]), &device)
            .require_grad();
        // The view is [4, 3]: element (j, i) of the view is x[i][j], flat `j * 3 + i` there.
        let keep: Vec<bool> = (0..12).map(|k| k % 5 != 2).collect();
        let mask = Tensor::<2, burn::tensor::Bool>::from_data(
            TensorData::new(keep.clone(), [4, 3]),
            &device,
        );
        let out = x.clone().transpose().compress(mask).values;
        let weights_values = pseudo_random(12, 9);
        let weights =
            Tensor::<1>::from_data(TensorData::new(weights_values.clone(), [12]), &device);
        let grads = (out.powf_scalar(2.0) * weights).sum().backward();
        let gradient = values(x.grad(&grads).expect("the input has a gradient"));
        let mut rank = 0;
        let mut expected = vec![0.0; 12];
        for (k, &selected) in keep.iter().enumerate() {
            if selected {
                let (j, i) = (k / 3, k % 3);
                expected[i * 4 + j] = 2.0 * weights_values[rank] * x_values[i * 4 + j];
                rank += 1;
            }
        }
        for (p, (g, e)) in gradient.iter().zip(&expected).enumerate() {
            assert!(
                (g - e).abs() <= 1e-4 * (1.0 + e.abs()),
                "position {p} on {device:?}: gradient {g}, expected {e}"
            );
        }
    }
}

/// `into_exact` keeps the gradient: `sum(w * exact)` of the kept slices along axis 1 gives each
/// selected element its weight, every other element zero.
#[test]
fn into_exact_passes_the_gradient_back() {
    for device in autodiff_devices() {
        let x_values = pseudo_random(12, 11);
        let x = Tensor::<2>::from_data(TensorData::new(x_values, [3, 4]), &device).require_grad();
        let keep = [true, false, true, true];
        let condition = Tensor::<1, burn::tensor::Bool>::from_data(
            TensorData::new(keep.to_vec(), [4]),
            &device,
        );
        let exact = x.clone().compress_axis(1, condition).into_exact();
        assert_eq!(exact.dims(), [3, 3]);
        let weights_values = pseudo_random(9, 13);
        let weights =
            Tensor::<2>::from_data(TensorData::new(weights_values.clone(), [3, 3]), &device);
        let grads = (exact * weights).sum().backward();
        let gradient = values(x.grad(&grads).expect("the input has a gradient"));
        let kept_columns = [Some(0), None, Some(1), Some(2)];
        for (p, g) in gradient.iter().enumerate() {
            let (row, column) = (p / 4, p % 4);
            let expected = kept_columns[column].map_or(0.0, |c| weights_values[row * 3 + c]);
            assert!(
                (g - expected).abs() <= 1e-5,
                "position {p} on {device:?}: gradient {g}, expected {expected}"
            );
        }
    }
}

#[test]
fn int_and_bool_compress_run_on_autodiff_devices() {
    for device in autodiff_devices() {
        let x = Tensor::<1, Int>::from_data([4, 5, 6], &device);
        let keep = Tensor::<1, burn::tensor::Bool>::from_data([true, false, true], &device);
        let exact = x.compress(keep.clone()).into_exact();
        assert_eq!(to_i64(&exact.into_data()), vec![4, 6], "on {device:?}");
        let exact = keep.clone().compress(keep).into_exact();
        assert_eq!(
            exact.into_data().iter::<bool>().collect::<Vec<_>>(),
            vec![true, true]
        );
    }
}
