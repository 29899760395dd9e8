"""``generate.local._gguf_parsed_once``: the de-quantizing load reuses gguf's readers and tensor-name maps,
and leaves gguf and transformers as they were. (That the copy it writes is the GGUF's model:
test_local_generator's ``test_the_cached_float32_copy_is_the_gguf_model``.)"""
import gguf
import transformers.modeling_gguf_pytorch_utils as legacy

from privtext.generate.local import _gguf_parsed_once


def test_maps_are_built_once_inside_and_everything_is_restored_after():
    before = gguf.GGUFReader, gguf.get_tensor_name_map, legacy.load_gguf_checkpoint
    with _gguf_parsed_once():
        first = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 30)
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 30) is first
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2) is not first
        assert legacy.load_gguf_checkpoint is not before[2]
    assert (gguf.GGUFReader, gguf.get_tensor_name_map, legacy.load_gguf_checkpoint) == before
    llama = gguf.MODEL_ARCH.LLAMA
    assert gguf.get_tensor_name_map(llama, 30) is not gguf.get_tensor_name_map(llama, 30)


def test_restored_when_the_load_fails():
    before = gguf.GGUFReader, gguf.get_tensor_name_map, legacy.load_gguf_checkpoint
    try:
        with _gguf_parsed_once():
            raise OSError("no such file")
    except OSError:
        pass
    assert (gguf.GGUFReader, gguf.get_tensor_name_map, legacy.load_gguf_checkpoint) == before
