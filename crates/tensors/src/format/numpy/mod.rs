//! NumPy's files: `.npy` ([`npy`], one array: a magic, a Python-literal header, the bytes) and
//! `.npz` ([`npz`], a zip of `.npy` members, stored or deflated, read through
//! [`zip`](super::zip)).

pub mod npy;
pub mod npz;
