// SPDX-License-Identifier: MIT
// parseStacks (gdb's `thread apply all bt`, eu-stack) and the merged tree: whatever the debugger printed, the tree
// of it reads back from its JSON as the same tree, and the capture's error and note are sentences or nothing.
#include "core/stacks.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView data = fuzz::inputView(bytes, size);
    const ProcessStacks stacks = parseStacks(data);
    StackTree tree;
    tree.addRank(0, stacks);
    tree.addRank(3, stacks); // two ranks alike: every node of the tree holds both
    tree.addNote(3, stackCaptureNote(data));
    tree.addError(5, stackCaptureError(data, data, int(size % 256)));
    const QString rendered = tree.render() + tree.render(true);
    const std::optional<StackTree> back = StackTree::fromJson(tree.toJson());
    if (!back || back->render() + back->render(true) != rendered)
        std::abort();
    fuzz::touch(rendered.toUtf8());
    return 0;
}
