//! Arbitrary bytes as a pickle: the restricted unpickler must return a typed error or an object
//! tree whose ids all lie in its arena — never panic, hang, over-allocate or let a global outside
//! the allow-list through.
#![no_main]

use bitlens_tensors::format::pickle::{self, Object, PickleError};
use bitlens_tensors::format::pytorch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match pickle::parse(data, &pytorch::allowed) {
        Ok(p) => {
            assert!(p.end <= data.len());
            let n = p.pickle.objects.len();
            assert!(p.pickle.root < n);
            for o in &p.pickle.objects {
                let ids: Vec<usize> = match o {
                    Object::List(v) | Object::Tuple(v) | Object::Set(v) => v.clone(),
                    Object::Dict(d) => d.iter().flat_map(|(k, v)| [*k, *v]).collect(),
                    Object::Call { args, state, .. } => {
                        [Some(*args), *state].into_iter().flatten().collect()
                    }
                    Object::PersId(id) => vec![*id],
                    Object::Global(g) => {
                        assert!(pytorch::allowed(g), "{g} slipped through");
                        vec![]
                    }
                    _ => vec![],
                };
                assert!(ids.iter().all(|&i| i < n));
            }
        }
        Err(PickleError::ForbiddenGlobal { global, .. }) => assert!(!pytorch::allowed(&global)),
        Err(_) => {}
    }
});
