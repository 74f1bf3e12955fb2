// SPDX-License-Identifier: MIT
#pragma once

#include <QArrayDataPointer>
#include <QByteArray>
#include <QByteArrayView>
#include <QString>

#include <array>
#include <memory>

namespace rankscope {

// Where a parser keeps the texts it finds by the thousand in a big log (its errors, NCCL's warnings), in few
// allocations and few fresh pages of memory. The texts are plain QByteArray and QString values, copied, changed
// and freed as any other; but the characters of many share one block of memory (each holds a reference to it, as
// implicitly shared strings do), where each text of its own would cost an allocation, its header and a share of a
// fresh page. A block lives as long as any text made in it does. And a text the store made a moment ago (the same
// exception from every rank, a warning a job repeats each step) is that text again, not a copy. A store that has
// made nothing takes a few words: a run keeps a parser for each of its ranks.
class TextStore final {
public:
    TextStore();

    [[nodiscard]] QByteArray bytes(QByteArrayView text);
    // From UTF-8, as QString::fromUtf8 makes it (bytes that are no UTF-8 as U+FFFD).
    [[nodiscard]] QString string(QByteArrayView utf8);
    // Lets go of its block and of the texts it would repeat: what it made lives on where it is kept, and no longer
    // than that (a parser that drops its errors as it goes).
    void clear();

    // The characters of one block (a longer text has a block of its own).
    static constexpr qsizetype kBlockBytes = 16 * 1024 - 64;
    static constexpr int kRecent = 256; // the texts of each kind it looks for a repeat among

private:
    // Blocks of characters of one type; the texts are slices of them.
    template <typename Char> class Blocks {
    public:
        // `size` characters and a terminating 0 (QByteArray and QString end with one), filled in by `fill`.
        template <typename Fill> QArrayDataPointer<Char> take(qsizetype size, Fill fill);

    private:
        QArrayDataPointer<Char> m_block; // its size: the characters handed out so far
    };

    // The texts it made last, by their bytes' hash.
    struct Recent {
        std::array<QByteArray, kRecent> bytes;
        std::array<QString, kRecent> strings; // of ASCII texts only: they compare with their bytes in place
    };

    [[nodiscard]] size_t slotOf(QByteArrayView text) const;
    [[nodiscard]] Recent& recent();

    size_t m_seed;
    Blocks<char> m_bytes;
    Blocks<char16_t> m_chars;
    std::unique_ptr<Recent> m_recent; // made with its first text
};

} // namespace rankscope
