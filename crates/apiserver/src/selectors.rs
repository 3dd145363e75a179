//! Label and field selectors of list and watch requests, as predicates over cached objects.

use std::sync::Arc;

use api::ApiError;

use crate::registry::{Meta, Predicate};

/// The predicate of a `labelSelector` query parameter.
pub fn label_predicate(selector: Option<&str>) -> Result<Option<Predicate>, ApiError> {
    let Some(s) = selector.filter(|s| !s.trim().is_empty()) else {
        return Ok(None);
    };
    let sel = api::selector::LabelSelector::parse(s).map_err(ApiError::from)?;
    Ok(Some(Arc::new(move |o: &Meta| sel.matches(|k| o.label(k)))))
}

/// The predicate of a `fieldSelector` query parameter, refusing fields the resource does
/// not support with upstream's message.
pub fn field_predicate(
    selector: Option<&str>,
    supported: &[&str],
) -> Result<Option<Predicate>, ApiError> {
    let Some(s) = selector.filter(|s| !s.trim().is_empty()) else {
        return Ok(None);
    };
    let sel = api::selector::FieldSelector::parse(s).map_err(ApiError::from)?;
    sel.check_supported_fields(supported)
        .map_err(ApiError::from)?;
    // `Meta::field` answers `metadata.name` and `metadata.namespace` too.
    Ok(Some(Arc::new(move |o: &Meta| sel.matches(|k| o.field(k)))))
}

/// All predicates together (`None`: everything matches).
pub fn all_of(preds: Vec<Predicate>) -> Predicate {
    Arc::new(move |o: &Meta| preds.iter().all(|p| p(o)))
}
