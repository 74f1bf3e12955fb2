// SPDX-License-Identifier: MIT
#include "jsonpathindex.h"

#include <QRegularExpression>

namespace rankscope::gui {

namespace {

// A tolerant recursive reader: it only records offsets, so it never needs to reject anything.
class PathScanner {
public:
    explicit PathScanner(const QString& text) : m_text(text) {}

    QHash<QString, int> scan() {
        skipSpace();
        value(QString(), 0);
        return m_paths;
    }

private:
    static constexpr int kMaxDepth = 64;

    bool atEnd() const { return m_pos >= m_text.size(); }
    QChar peek() const { return atEnd() ? QChar() : m_text.at(m_pos); }
    void skipSpace() {
        while (!atEnd() && peek().isSpace())
            ++m_pos;
    }

    QString string() {
        QString result;
        ++m_pos; // the opening quote
        while (!atEnd() && peek() != QLatin1Char('"')) {
            if (peek() == QLatin1Char('\\'))
                ++m_pos;
            if (!atEnd())
                result += m_text.at(m_pos++);
        }
        ++m_pos;
        return result;
    }

    void value(const QString& path, int depth) {
        skipSpace();
        if (atEnd() || depth > kMaxDepth)
            return;
        if (peek() == QLatin1Char('{'))
            object(path, depth);
        else if (peek() == QLatin1Char('['))
            array(path, depth);
        else if (peek() == QLatin1Char('"'))
            string();
        else
            while (!atEnd() && !QStringLiteral(",}]").contains(peek()) && !peek().isSpace())
                ++m_pos;
    }

    void object(const QString& path, int depth) {
        ++m_pos;
        while (true) {
            skipSpace();
            if (atEnd() || peek() != QLatin1Char('"')) {
                if (!atEnd())
                    ++m_pos; // '}' or junk
                return;
            }
            const int keyOffset = m_pos;
            const QString key = string();
            const QString member = path.isEmpty() ? key : path + QLatin1Char('.') + key;
            m_paths.insert(member, keyOffset);
            skipSpace();
            if (peek() != QLatin1Char(':'))
                return;
            ++m_pos;
            value(member, depth + 1);
            skipSpace();
            if (peek() != QLatin1Char(','))
                continue;
            ++m_pos;
        }
    }

    void array(const QString& path, int depth) {
        ++m_pos;
        for (int index = 0;; ++index) {
            skipSpace();
            if (atEnd() || peek() == QLatin1Char(']')) {
                ++m_pos;
                return;
            }
            const QString element = QStringLiteral("%1[%2]").arg(path).arg(index);
            m_paths.insert(element, m_pos);
            const int before = m_pos;
            value(element, depth + 1);
            skipSpace();
            if (peek() == QLatin1Char(','))
                ++m_pos;
            else if (m_pos == before)
                return; // nothing could be read: stop rather than loop
        }
    }

    const QString& m_text;
    int m_pos = 0;
    QHash<QString, int> m_paths;
};

} // namespace

QHash<QString, int> indexJsonPaths(const QString& text) {
    return PathScanner(text).scan();
}

int jsonPathOffset(const QString& text, const QString& path) {
    const QHash<QString, int> paths = indexJsonPaths(text);
    QString current = path.section(QLatin1Char(':'), 0, 0);
    static const QRegularExpression lastSegment(QStringLiteral("(\\.[^.\\[]*|\\[\\d+\\])$"));
    while (!current.isEmpty()) {
        if (const auto found = paths.constFind(current); found != paths.cend())
            return *found;
        const QString parent = QString(current).remove(lastSegment);
        if (parent == current)
            break;
        current = parent;
    }
    return 0;
}

} // namespace rankscope::gui
