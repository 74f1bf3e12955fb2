// SPDX-License-Identifier: MIT
// decodeTrainerEvent on one line of JSON (no chunking: it takes whole lines), and every typed accessor.
#include "core/trainerevent.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const TrainerEventResult result = decodeTrainerEvent(fuzz::inputView(bytes, size));
    if (!result.ok()) {
        fuzz::touch(result.error.toUtf8());
        return 0;
    }
    const TrainerEvent& event = *result.event;
    for (const char* key : {"loss", "step", "status", "ok", "config", "v", "type", "rank", "time", "missing"}) {
        (void)event.has(key);
        (void)event.number(key);
        (void)event.integer(key, -1);
        fuzz::touch(event.string(key).toUtf8());
        (void)event.boolean(key, true);
        (void)event.object(key);
    }
    // Decoding the object again must agree with decoding the text.
    const TrainerEventResult again = decodeTrainerEvent(event.fields);
    if (!again.ok() || again.event->type != event.type || again.event->rank != event.rank)
        std::abort();
    return 0;
}
