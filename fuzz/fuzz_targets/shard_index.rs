//! Arbitrary bytes as a `*.safetensors.index.json`: a typed error, or an index whose shard names
//! are all plain relative paths.
#![no_main]

use bitlens_tensors::index::unsafe_shard_name;
use bitlens_tensors::ShardIndex;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(index) = ShardIndex::parse(data) {
        assert!(!index.weight_map.is_empty());
        for shard in &index.shards {
            assert_eq!(unsafe_shard_name(shard), None);
            // `..` may appear inside a name (`m-2..bin`), never as a path component.
            assert!(!shard.split(['/', '\\']).any(|c| c == ".."), "{shard}");
        }
    }
});
