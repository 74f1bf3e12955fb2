// SPDX-License-Identifier: MIT
// parseStacks (gdb's `thread apply all bt`, eu-stack) and the merged tree: whatever the debugger printed, the tree
// of it reads back from its JSON as the same tree, and the capture's error and note are sentences or nothing.
// splitStackCaptures: what it splits out of any text, framed again, splits out the same.
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

    const int count = int(size % 5);
    const QVector<std::optional<StackCaptureOutput>> captures = splitStackCaptures(data, count);
    if (captures.size() != count)
        std::abort();
    QByteArray framed;
    for (int i = 0; i < count; ++i) {
        if (!captures[i])
            continue;
        const QByteArray status = QByteArray::number(captures[i]->exitStatus);
        for (const auto& [stream, text] :
             {std::pair{"out", captures[i]->out}, std::pair{"err", captures[i]->err}, std::pair{"rc", status}})
            framed += "rankscope-capture " + QByteArray::number(i) + ' ' + stream + ' ' +
                      QByteArray::number(text.size()) + '\n' + text;
    }
    const QVector<std::optional<StackCaptureOutput>> again = splitStackCaptures(framed, count);
    for (int i = 0; i < count; ++i)
        if (bool(again[i]) != bool(captures[i]) ||
            (again[i] && (again[i]->out != captures[i]->out || again[i]->err != captures[i]->err ||
                          again[i]->exitStatus != captures[i]->exitStatus)))
            std::abort();
    return 0;
}
