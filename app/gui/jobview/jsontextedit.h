// SPDX-License-Identifier: MIT
#pragma once

#include <QJsonObject>
#include <QString>

namespace rankscope::gui {

// text changed to hold target, and only where the two differ: what the form writes into a job file a user wrote
// by hand. Members keep their order, and the file its comments ("//" keys), blank lines and spacing. A changed
// value is replaced where it stands (an object or an array of the same length member by member); a removed
// member goes with its comma; a new one is appended to its object, indented as its siblings are. A text that
// is not a JSON object (an empty one, say) gets target written out whole.
[[nodiscard]] QString editJsonText(const QString& text, const QJsonObject& target);

} // namespace rankscope::gui
