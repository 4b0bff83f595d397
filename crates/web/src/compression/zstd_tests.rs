#![allow(clippy::unwrap_used)]

use super::*;

const LIMIT: usize = 1024;

fn compress(data: &[u8], level: i32, size: Option<u64>) -> (Vec<u8>, usize) {
    let mut c = ZstdCompressor::new(level, false, size).unwrap();
    let mut all = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let mut out = Vec::new();
        at += c
            .step(
                &data[at..(at + 64 * 1024).min(data.len())],
                false,
                &mut out,
                LIMIT,
            )
            .unwrap();
        assert!(out.len() <= LIMIT);
        all.extend(out);
    }
    loop {
        let mut out = Vec::new();
        c.step(&[], true, &mut out, LIMIT).unwrap();
        if out.is_empty() {
            break;
        }
        all.extend(out);
    }
    (all, c.memory())
}

fn decompress(data: &[u8], piece: usize, window_log: u32) -> Result<Vec<u8>, CodecError> {
    let mut d = ZstdDecompressor::new(window_log)?;
    let mut all = Vec::new();
    for chunk in data.chunks(piece.max(1)) {
        let mut at = 0;
        loop {
            let mut out = Vec::new();
            at += d.step(&chunk[at..], &mut out, LIMIT)?;
            assert!(out.len() <= LIMIT);
            if out.is_empty() && at == chunk.len() {
                break;
            }
            all.extend(out);
        }
    }
    assert!(
        d.memory() <= decompressor_charge(window_log),
        "{}",
        d.memory()
    );
    d.finish()?;
    Ok(all)
}

fn sample(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i % 251) as u8 ^ (i / 7) as u8)
        .collect()
}

#[test]
fn round_trips_in_bounded_steps_and_refuses_what_is_broken() {
    let data = sample(300_000);
    for level in [-5, 1, 3, 19] {
        let (packed, _) = compress(&data, level, None);
        for piece in [1, 100, 1 << 20] {
            assert_eq!(
                decompress(&packed, piece, 23).unwrap(),
                data,
                "{level} {piece}"
            );
        }
    }
    let (packed, _) = compress(b"hello", 3, Some(5));
    // What workerd's zstdCompressSync('hello') gives.
    assert_eq!(
        packed,
        [
            0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x05, 0x29, 0, 0, b'h', b'e', b'l', b'l', b'o'
        ]
    );
    assert_eq!(
        decompress(&packed[..packed.len() - 1], 3, 23),
        Err(CodecError::Truncated)
    );
    assert_eq!(decompress(&[], 3, 23), Ok(Vec::new()));
    assert_eq!(
        decompress(b"garbage garbage", 100, 23),
        Err(CodecError::Corrupt("Unknown frame descriptor".into()))
    );
}

/// libzstd never holds more than what the codec is charged.
#[test]
fn the_charges_cover_what_libzstd_allocates() {
    let data = sample(3 << 20);
    for level in [-5, 1, 3, 9, 19, 22] {
        for size in [100usize, 70_000, 1 << 20, 3 << 20] {
            let (_, known) = compress(&data[..size], level, Some(size as u64));
            assert!(
                known <= compressor_charge(level, Some(size as u64)),
                "{level} {size} {known}"
            );
            let (_, unknown) = compress(&data[..size], level, None);
            assert!(
                unknown <= compressor_charge(level, None),
                "{level} {size} {unknown}"
            );
        }
    }
}

/// A frame of unknown size declaring a 2^28 window (`zstd --long=28` of
/// 1000 bytes from stdin) is refused by the default decoder.
#[test]
fn a_frame_over_the_window_limit_is_refused() {
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x90];
    frame.extend(&[0u8; 16]);
    let mut d = ZstdDecompressor::new(DEFAULT_WINDOW_LOG_MAX).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        d.step(&frame, &mut out, LIMIT),
        Err(CodecError::Corrupt(
            "Frame requires too much memory for decoding".into()
        ))
    );
    assert!(d.memory() < 1 << 20, "{}", d.memory());
}

#[test]
fn a_bomb_comes_out_in_bounded_steps() {
    let (bomb, _) = compress(&vec![0; 8 << 20], 3, None);
    assert!(bomb.len() < 16 * 1024, "{}", bomb.len());
    let mut d = ZstdDecompressor::new(DEFAULT_WINDOW_LOG_MAX).unwrap();
    let (mut at, mut total, mut steps) = (0, 0, 0);
    loop {
        let mut out = Vec::new();
        at += d.step(&bomb[at..], &mut out, 64 * 1024).unwrap();
        assert!(out.len() <= 64 * 1024);
        if out.is_empty() && at == bomb.len() {
            break;
        }
        total += out.len();
        steps += 1;
    }
    d.finish().unwrap();
    assert_eq!(total, 8 << 20);
    assert!(steps >= 128);
}
