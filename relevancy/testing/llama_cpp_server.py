"""llama-cpp-python's OpenAI-compatible server, with the model loaded as the embedded default
loads it (llama.cpp's extra CPU buffer types off).

Run it as ``python -m relevancy.testing.llama_cpp_server --model FILE.gguf [its options]``:
the options are ``python -m llama_cpp.server``'s, and so is everything it serves. The one
difference is ``use_extra_bufts = False`` for every model it loads. On an Intel Xeon with AMX
(Sapphire Rapids and newer) ``python -m llama_cpp.server`` from a llama-cpp-python compiled
there answers ``/v1/models`` and then segfaults at its first completion, when the weights sit
in llama.cpp's AMX buffers; the embedded generator avoids this the same way (see
``relevancy/backends/_local_generator.py``). The tests and benches that need a real llama.cpp
server start this one, so they run on such machines too.
"""

from __future__ import annotations

from relevancy.backends import no_extra_buffer_types


def main() -> None:
    from llama_cpp.server.__main__ import main as serve

    with no_extra_buffer_types(every_thread=True):
        serve()


if __name__ == "__main__":
    main()
