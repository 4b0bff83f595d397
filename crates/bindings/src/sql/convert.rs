//! Values between JavaScript and an object's SQL, as workerd maps them:
//! bindings from `string`, `number` (bound as REAL), `ArrayBuffer` or a
//! view of one (BLOB), `null`/`undefined` (NULL), anything else as its
//! string; columns to `number` (INTEGER and REAL), `string`, `ArrayBuffer`
//! (BLOB) or `null`.

use isolane_engine::api::{HostError, array_buffer, value_string, view_bytes};
use isolane_storage::sql::{Executed, RowSink, SqlParam, SqlValue};

/// The bindings of `sqlExec`, a JS array.
pub(crate) fn params(
    scope: &mut v8::PinScope<'_, '_>,
    bindings: v8::Local<'_, v8::Value>,
) -> Result<Vec<SqlParam>, HostError> {
    let array = v8::Local::<v8::Array>::try_from(bindings)
        .map_err(|_| HostError::type_error("sqlExec: bindings must be an array"))?;
    let mut out = Vec::with_capacity(array.length() as usize);
    for i in 0..array.length() {
        let Some(value) = array.get_index(scope, i) else {
            return Err(HostError::type_error(
                "sqlExec: a binding could not be read",
            ));
        };
        out.push(param(scope, value));
    }
    Ok(out)
}

fn param(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> SqlParam {
    if value.is_null_or_undefined() {
        return SqlParam::Null;
    }
    if value.is_number() {
        return SqlParam::Real(value.number_value(scope).unwrap_or(f64::NAN));
    }
    if let Ok(buffer) = v8::Local::<v8::ArrayBuffer>::try_from(value) {
        let len = buffer.byte_length();
        let view = v8::Uint8Array::new(scope, buffer, 0, len);
        return SqlParam::Blob(view.and_then(|v| view_bytes(v.into())).unwrap_or_default());
    }
    if let Some(bytes) = view_bytes(value) {
        return SqlParam::Blob(bytes);
    }
    SqlParam::Text(value_string(scope, value))
}

/// The rows of the query's last statement, made JS arrays as SQLite steps
/// them.
pub(crate) struct Rows<'a, 's, 'i> {
    scope: &'a mut v8::PinScope<'s, 'i>,
    columns: Vec<v8::Local<'s, v8::Value>>,
    rows: Vec<v8::Local<'s, v8::Value>>,
}

impl<'a, 's, 'i> Rows<'a, 's, 'i> {
    pub(crate) fn new(scope: &'a mut v8::PinScope<'s, 'i>) -> Self {
        Self {
            scope,
            columns: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// `[columnNames, rows, rowsRead, rowsWritten, pending]`, or the
    /// query's error.
    #[allow(clippy::cast_precision_loss)]
    pub(super) fn answer(
        self,
        done: Result<(Executed, bool), HostError>,
    ) -> Result<v8::Local<'s, v8::Value>, HostError> {
        let (done, pending) = done?;
        let scope = self.scope;
        let columns = v8::Array::new_with_elements(scope, &self.columns).into();
        let rows = v8::Array::new_with_elements(scope, &self.rows).into();
        let read = v8::Number::new(scope, done.rows_read as f64).into();
        let written = v8::Number::new(scope, done.rows_written as f64).into();
        let pending = v8::Boolean::new(scope, pending).into();
        let all = [columns, rows, read, written, pending];
        Ok(v8::Array::new_with_elements(scope, &all).into())
    }

    /// The columns and rows as JS arrays (D1's answers).
    pub(crate) fn into_arrays(self) -> (v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>) {
        let columns = v8::Array::new_with_elements(self.scope, &self.columns).into();
        let rows = v8::Array::new_with_elements(self.scope, &self.rows).into();
        (columns, rows)
    }

    fn value(&mut self, value: SqlValue<'_>) -> Option<v8::Local<'s, v8::Value>> {
        let scope = &mut *self.scope;
        Some(match value {
            SqlValue::Null => v8::null(scope).into(),
            // As workerd: integers are numbers (doubles).
            #[allow(clippy::cast_precision_loss)]
            SqlValue::Integer(n) => v8::Number::new(scope, n as f64).into(),
            SqlValue::Real(n) => v8::Number::new(scope, n).into(),
            SqlValue::Text(text) => {
                v8::String::new_from_utf8(scope, text, v8::NewStringType::Normal)?.into()
            }
            SqlValue::Blob(bytes) => array_buffer(scope, bytes.to_vec())?.into(),
        })
    }
}

impl RowSink for Rows<'_, '_, '_> {
    fn statement(&mut self, columns: &[&str]) {
        self.rows.clear();
        let scope = &mut *self.scope;
        self.columns = columns
            .iter()
            .filter_map(|name| v8::String::new(scope, name).map(Into::into))
            .collect();
    }

    fn row(&mut self, values: &[SqlValue<'_>]) -> bool {
        if self.scope.is_execution_terminating() {
            return false;
        }
        let mut cells = Vec::with_capacity(values.len());
        for value in values {
            let Some(cell) = self.value(*value) else {
                return false;
            };
            cells.push(cell);
        }
        let row = v8::Array::new_with_elements(&*self.scope, &cells).into();
        self.rows.push(row);
        true
    }
}
