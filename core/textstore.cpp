// SPDX-License-Identifier: MIT
#include "core/textstore.h"

#include "core/keywordsearch.h"

#include <QHashSeed>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace rankscope {

template <typename Char>
template <typename Fill>
QArrayDataPointer<Char> TextStore::Blocks<Char>::take(qsizetype size, Fill fill) {
    const qsizetype need = size + 1;
    if (!m_block.d_ptr() || m_block.freeSpaceAtEnd() < need) {
        const qsizetype capacity = std::max<qsizetype>(kBlockBytes / qsizetype(sizeof(Char)), need);
        m_block = QArrayDataPointer<Char>(QTypedArrayData<Char>::allocate(capacity));
    }
    Char* const at = m_block.data() + m_block.size;
    fill(at);
    at[size] = Char(0);
    m_block.size += need;
    QArrayDataPointer<Char> text(m_block); // one more reference to the block
    text.ptr = at;
    text.size = size;
    return text;
}

TextStore::TextStore() : m_seed(QHashSeed::globalSeed()) {}

void TextStore::clear() {
    m_bytes = {};
    m_chars = {};
    m_recent.reset();
}

TextStore::Recent& TextStore::recent() {
    if (!m_recent)
        m_recent = std::make_unique<Recent>();
    return *m_recent;
}

size_t TextStore::slotOf(QByteArrayView text) const {
    return static_cast<size_t>(hashBytes(std::string_view(text.data(), static_cast<size_t>(text.size())), m_seed)) %
           kRecent;
}

QByteArray TextStore::bytes(QByteArrayView text) {
    if (text.isEmpty())
        return QByteArray(text.data(), 0); // null for a null view, as toByteArray() makes it
    QByteArray& made = recent().bytes[slotOf(text)];
    if (sameBytes(made, text))
        return made;
    made = QByteArray(m_bytes.take(
        text.size(), [&text](char* at) { std::memcpy(at, text.data(), static_cast<size_t>(text.size())); }));
    return made;
}

QString TextStore::string(QByteArrayView utf8) {
    const bool ascii = std::all_of(utf8.begin(), utf8.end(), [](char c) { return static_cast<signed char>(c) >= 0; });
    if (!ascii || utf8.isEmpty())
        return QString::fromUtf8(utf8);
    QString& made = recent().strings[slotOf(utf8)];
    if (made.size() == utf8.size() &&
        std::equal(utf8.begin(), utf8.end(), made.utf16(), [](char c, char16_t u) { return char16_t(c) == u; }))
        return made;
    made = QString(m_chars.take(utf8.size(), [&utf8](char16_t* at) {
        for (const char c : utf8)
            *at++ = static_cast<char16_t>(c);
    }));
    return made;
}

} // namespace rankscope
