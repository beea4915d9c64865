//! Arbitrary tensor descriptions over arbitrary file bytes through `format::bytes`: the first
//! bytes of the input describe one tensor (where its bytes are — a range, a deflated member or a
//! strided view —, its element type and shape), the rest is the file. Streaming its bytes in
//! windows (`for_each_window`) and pulling them in lockstep against themselves (`for_each_pair`)
//! returns a typed error or the same bytes, `byte_len` of them — never a panic, and memory bounded
//! by the file (the harness stops a stream after 1 MiB of output: a view of stride 0 may declare
//! far more elements than its file holds, which a caller pays for as it reads, not at once).
#![no_main]

use bitlens_tensors::format::bytes::{self, BytesError};
use bitlens_tensors::format::{Data, ElementType, Entry, GgmlType};
use bitlens_tensors::Dtype;
use libfuzzer_sys::fuzz_target;

/// Output bytes a stream may produce before the harness stops it.
const CAP: usize = 1 << 20;

/// A little-endian reader over the description bytes (zeros once they run out).
struct Desc<'a>(&'a [u8]);

impl Desc<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    /// A small number most of the time (so views fit their files), any u64 sometimes.
    fn num(&mut self) -> u64 {
        match self.u8() % 4 {
            0 => u64::from_le_bytes(self.take::<8>()),
            1 => u64::from(u32::from_le_bytes(self.take::<4>())),
            _ => u64::from(self.u8()),
        }
    }
}

/// Stops the stream at [`CAP`] bytes.
enum Stop {
    Bytes(BytesError),
    Cap,
}

impl From<BytesError> for Stop {
    fn from(e: BytesError) -> Self {
        Stop::Bytes(e)
    }
}

fuzz_target!(|data: &[u8]| {
    let split = usize::from(data.first().copied().unwrap_or(0)).min(data.len());
    let (desc, file) = data.split_at(split);
    let mut d = Desc(desc.get(1..).unwrap_or(&[]));
    let kind = d.u8() % 3;
    let ty = match d.u8() {
        t if t & 0x80 != 0 => ElementType::Ggml(GgmlType(u32::from(t & 0x3f))),
        t => ElementType::Dtype(Dtype::ALL[usize::from(t) % Dtype::ALL.len()]),
    };
    let dims = usize::from(d.u8() % 5);
    let shape: Vec<u64> = (0..dims).map(|_| d.num()).collect();
    let data = match kind {
        0 => Data::Range {
            offset: d.num(),
            len: d.num(),
        },
        1 => Data::Deflated {
            offset: d.num(),
            compressed: d.num(),
            skip: d.num(),
            len: d.num(),
        },
        _ => Data::Strided {
            offset: d.num(),
            len: d.num(),
            storage_offset: d.num(),
            strides: (0..dims).map(|_| d.num()).collect(),
        },
    };
    let window = 1 + usize::from(d.u8()) * 37;
    let entry = Entry {
        name: "fuzz".into(),
        ty,
        shape,
        data,
    };
    let src = file.to_vec();
    let len = bytes::byte_len(&entry);

    let mut pushed = Vec::new();
    let r = bytes::for_each_window::<_, Stop>(&src, &entry, window, |w| {
        assert!(!w.is_empty());
        pushed.extend_from_slice(w);
        if pushed.len() >= CAP {
            return Err(Stop::Cap);
        }
        Ok(())
    });
    let complete = match r {
        Ok(()) => {
            assert_eq!(pushed.len() as u64, len);
            true
        }
        Err(Stop::Cap) => false,
        Err(Stop::Bytes(_)) => return,
    };

    let mut pulled = Vec::new();
    let r = bytes::for_each_pair::<_, Stop>((&src, &entry), (&src, &entry), window, |a, b| {
        assert_eq!(a, b);
        assert!(!a.is_empty() && a.len() <= window);
        pulled.extend_from_slice(a);
        if pulled.len() >= CAP {
            return Err(Stop::Cap);
        }
        Ok(())
    });
    match r {
        Ok(()) => assert!(complete && pulled == pushed),
        Err(Stop::Cap) => {
            let n = pulled.len().min(pushed.len());
            assert_eq!(pulled[..n], pushed[..n]);
        }
        Err(Stop::Bytes(e)) => panic!("the push stream succeeded, the pull one failed: {e}"),
    }
});
