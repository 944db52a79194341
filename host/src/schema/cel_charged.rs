//! CEL functions whose cost grows with their arguments, charged as cel-go's runtime tracker
//! charges them (its `ext` libraries' trackers) *before* they run, in place of the
//! interpreter's own, which run first and are never charged:
//!
//! - `lists.range(n)`: `n + 11`. It allocates `n` items: `lists.range(self.count)` with a count
//!   of 10⁹ would take the host's memory (10⁸ took 5.5 GB) before any limit could stop it.
//! - `distinct()`: `2·n² + 11` (`2.1·n²` for strings and bytes): quadratic.
//! - `sets.contains(a, b)`, `sets.intersects(a, b)`: `1 + |a|·|b|`; `sets.equivalent`: twice
//!   that.
//!
//! What one expression is charged is summed (`cel::charge`); past kube's per-call limit the
//! expression stops with cel-go's `operation cancelled: actual cost limit exceeded`, which no
//! `||` or `&&` absorbs. The other functions' costs are still estimated before an expression
//! runs, not counted (docs/api.md).

use std::sync::Arc;

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::Value as CelValue;
use kube_cel::cel::{Context, ExecutionError, ResolveResult};

use super::cel::charge;

pub(crate) fn register(ctx: &mut Context<'_>) {
    ctx.add_function("lists.range", range);
    ctx.add_function("distinct", distinct);
    ctx.add_function("sets.contains", sets_contains);
    ctx.add_function("sets.equivalent", sets_equivalent);
    ctx.add_function("sets.intersects", sets_intersects);
}

fn size(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// `lists.range(n)`: `[0, 1, ..., n-1]`.
fn range(n: i64) -> ResolveResult {
    if n < 0 {
        return Err(ExecutionError::function_error(
            "lists.range",
            "range argument must be non-negative",
        ));
    }
    charge(
        u64::try_from(n).unwrap_or(0).saturating_add(11),
        "lists.range",
    )?;
    Ok(CelValue::List(Arc::new(
        (0..n).map(CelValue::Int).collect(),
    )))
}

/// `list.distinct()`: the items, each first occurrence, in order.
fn distinct(This(this): This<Arc<Vec<CelValue>>>) -> ResolveResult {
    let n = size(this.len());
    let textual = this
        .first()
        .is_some_and(|v| matches!(v, CelValue::String(_) | CelValue::Bytes(_)));
    let squared = n.saturating_mul(n);
    let cost = if textual {
        squared.saturating_mul(21) / 10
    } else {
        squared.saturating_mul(2)
    };
    charge(cost.saturating_add(11), "distinct")?;
    let mut out: Vec<CelValue> = Vec::new();
    for item in this.iter() {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    Ok(CelValue::List(Arc::new(out)))
}

fn all_in(a: &[CelValue], b: &[CelValue]) -> bool {
    b.iter().all(|x| a.contains(x))
}

fn set_cost(a: &[CelValue], b: &[CelValue], times: u64, name: &str) -> Result<(), ExecutionError> {
    let cost = size(a.len())
        .saturating_mul(size(b.len()))
        .saturating_mul(times);
    charge(cost.saturating_add(1), name)
}

/// `sets.contains(a, b)`: every item of `b` is in `a`.
fn sets_contains(a: Arc<Vec<CelValue>>, b: Arc<Vec<CelValue>>) -> ResolveResult {
    set_cost(&a, &b, 1, "sets.contains")?;
    Ok(CelValue::Bool(all_in(&a, &b)))
}

/// `sets.equivalent(a, b)`: each contains the other.
fn sets_equivalent(a: Arc<Vec<CelValue>>, b: Arc<Vec<CelValue>>) -> ResolveResult {
    set_cost(&a, &b, 2, "sets.equivalent")?;
    Ok(CelValue::Bool(all_in(&a, &b) && all_in(&b, &a)))
}

/// `sets.intersects(a, b)`: some item is in both.
fn sets_intersects(a: Arc<Vec<CelValue>>, b: Arc<Vec<CelValue>>) -> ResolveResult {
    set_cost(&a, &b, 1, "sets.intersects")?;
    Ok(CelValue::Bool(a.iter().any(|x| b.contains(x))))
}
