//! `node:zlib`'s host function beyond the compression unit's codecs:
//! `crc32` (the `crc32fast` crate).

host_fn! {
/// `zlibCrc32(view, value)` → the CRC-32 of the view's bytes, continuing
/// from `value` (Node's `zlib.crc32(data, value)`); read in place.
pub(super) fn crc32<'s>(_scope, data: v8::Local<'s, v8::Value>, value: u32) -> f64 {
    let mut hasher = crc32fast::Hasher::new_with_initial(value);
    if let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(data) {
        let mut storage = [0u8; v8::TYPED_ARRAY_MAX_SIZE_IN_HEAP];
        hasher.update(view.get_contents(&mut storage));
    }
    f64::from(hasher.finalize())
}
}
