// SPDX-License-Identifier: MIT
#pragma once

#include <QHash>

#include <vector>

namespace rankscope {

// Items that say the same thing (one exception on every rank, one NCCL warning from every process), grouped in the
// order each was first seen, so that a report shows each once with where it came again.
template <typename T> struct Repeats {
    const T* first = nullptr;
    std::vector<const T*> again;
};

// `keyOf(item)` gives what makes two items the same, as any type QHash takes. The items must outlive the groups.
template <typename T, typename Range, typename KeyOf>
[[nodiscard]] std::vector<Repeats<T>> groupRepeats(const Range& items, KeyOf keyOf) {
    using Key = std::decay_t<decltype(keyOf(std::declval<const T&>()))>;
    std::vector<Repeats<T>> groups;
    QHash<Key, size_t> byKey;
    for (const T& item : items) {
        Key key = keyOf(item);
        const auto found = byKey.constFind(key);
        if (found == byKey.cend()) {
            byKey.insert(std::move(key), groups.size());
            groups.push_back({&item, {}});
        } else {
            groups[*found].again.push_back(&item);
        }
    }
    return groups;
}

} // namespace rankscope
