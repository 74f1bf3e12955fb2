// SPDX-License-Identifier: MIT
#include "jsontextedit.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>
#include <deque>

namespace rankscope::gui {

namespace {

// Where each value of a valid JSON text stands; keys decoded.
struct Node {
    int start = 0;
    int end = 0; // one past the value
    struct Member {
        QString key;
        int keyStart = 0;
        Node* value = nullptr;
    };
    QVector<Member> members; // an object's, in text order
    QVector<Node*> elements; // an array's
};

// Reads a text QJsonDocument accepted, so it never meets anything but JSON.
class Reader {
public:
    explicit Reader(const QString& text) : m_text(text) {}

    Node* read() { return value(); }

private:
    void space() {
        while (m_pos < m_text.size() && m_text.at(m_pos).isSpace())
            ++m_pos;
    }

    // The string at m_pos, as its quoted text.
    QStringView string() {
        const int start = m_pos++;
        while (m_text.at(m_pos) != QLatin1Char('"'))
            m_pos += m_text.at(m_pos) == QLatin1Char('\\') ? 2 : 1;
        ++m_pos;
        return QStringView(m_text).mid(start, m_pos - start);
    }

    Node* value() {
        space();
        Node* node = &m_nodes.emplace_back();
        node->start = m_pos;
        const QChar c = m_text.at(m_pos);
        if (c == QLatin1Char('{') || c == QLatin1Char('[')) {
            const QChar close = c == QLatin1Char('{') ? QLatin1Char('}') : QLatin1Char(']');
            ++m_pos;
            space();
            while (m_text.at(m_pos) != close) {
                if (c == QLatin1Char('{')) {
                    const int keyStart = m_pos;
                    const QString key = decode(string());
                    space();
                    ++m_pos; // ':'
                    node->members.append({key, keyStart, value()});
                } else {
                    node->elements.append(value());
                }
                space();
                if (m_text.at(m_pos) == QLatin1Char(','))
                    ++m_pos;
                space();
            }
            ++m_pos;
        } else if (c == QLatin1Char('"')) {
            string();
        } else {
            while (m_pos < m_text.size() && !QStringView(u",}] \t\r\n").contains(m_text.at(m_pos)))
                ++m_pos;
        }
        node->end = m_pos;
        return node;
    }

    static QString decode(QStringView quoted) {
        return QJsonDocument::fromJson(QStringLiteral("[%1]").arg(quoted).toUtf8()).array().at(0).toString();
    }

    const QString& m_text;
    int m_pos = 0;
    std::deque<Node> m_nodes; // stable addresses
};

struct Edit {
    int start;
    int end;
    QString text;
};

// A member (from its key) or an element of the text, to its value's end.
struct Item {
    int start;
    int end;
};

class Editor {
public:
    explicit Editor(const QString& text)
        : m_text(text), m_unit(indentUnit()),
          m_newline(text.contains(QLatin1String("\r\n")) ? QStringLiteral("\r\n") : QStringLiteral("\n")) {}

    void object(const Node& node, const QJsonObject& current, const QJsonObject& target) {
        // The last member of a key is the one a reader keeps; a key that goes takes every one of its members.
        QVector<bool> kept(node.members.size());
        for (int i = 0; i < node.members.size(); ++i)
            kept[i] = target.contains(node.members[i].key);
        for (int i = 0; i < node.members.size(); ++i) {
            const Node::Member& member = node.members[i];
            if (kept[i] && isLast(node, i) && current.value(member.key) != target.value(member.key))
                value(*member.value, current.value(member.key), target.value(member.key));
        }

        QVector<Item> items;
        for (const Node::Member& member : node.members)
            items.append({member.keyStart, member.value->end});
        QVector<std::pair<QString, QJsonValue>> added;
        for (auto it = target.begin(); it != target.end(); ++it)
            if (!current.contains(it.key()))
                added.append({it.key(), *it});
        if (!splice(items, kept, added) && (!target.isEmpty() || !node.members.isEmpty()))
            m_edits.append({node.start, node.end, write(target, lineIndent(node.start))}); // nothing stays
    }

    QString result() {
        std::sort(m_edits.begin(), m_edits.end(), [](const Edit& a, const Edit& b) { return a.start > b.start; });
        QString text = m_text;
        for (const Edit& edit : std::as_const(m_edits))
            text.replace(edit.start, edit.end - edit.start, edit.text);
        return text;
    }

private:
    void value(const Node& node, const QJsonValue& current, const QJsonValue& target) {
        if (current.isObject() && target.isObject()) {
            object(node, current.toObject(), target.toObject());
            return;
        }
        if (current.isArray() && target.isArray() && node.elements.size() == current.toArray().size() &&
            array(node, current.toArray(), target.toArray()))
            return;
        m_edits.append({node.start, node.end, write(target, lineIndent(node.start))});
    }

    // An array of the same length element by element; else the elements that begin `to` kept in order, the
    // others taken out, and the rest of `to` appended (elements taken out or added at the end change only those).
    // False when no element stays.
    bool array(const Node& node, const QJsonArray& from, const QJsonArray& to) {
        if (from.size() == to.size()) {
            for (int i = 0; i < from.size(); ++i)
                if (from[i] != to[i])
                    value(*node.elements[i], from[i], to[i]);
            return true;
        }
        QVector<bool> kept(from.size());
        int next = 0; // in to
        for (int i = 0; i < from.size() && next < to.size(); ++i)
            if (from[i] == to[next]) {
                kept[i] = true;
                ++next;
            }
        QVector<Item> items;
        for (const Node* element : node.elements)
            items.append({element->start, element->end});
        QVector<std::pair<QString, QJsonValue>> added;
        for (int i = next; i < to.size(); ++i)
            added.append({QString(), to[i]});
        return splice(items, kept, added);
    }

    // Takes out the items of an object or array that are not kept, each with its comma, and appends `added`
    // (members, or elements where the key is null) after the last kept one, as its neighbours are laid out.
    // False when nothing is kept, and nothing done.
    bool splice(const QVector<Item>& items, const QVector<bool>& kept,
                const QVector<std::pair<QString, QJsonValue>>& added) {
        const int lastKept = static_cast<int>(std::find(kept.crbegin(), kept.crend(), true).base() - kept.cbegin()) - 1;
        if (lastKept < 0)
            return false;
        for (int i = 0; i < lastKept; ++i)
            if (!kept[i])
                m_edits.append({items[i].start, items[i + 1].start, QString()});
        const Item& anchor = items[lastKept];
        const QString indent = lineIndent(anchor.start);
        const QString separator =
            startsLine(anchor.start) ? QLatin1Char(',') + m_newline + indent : QStringLiteral(", ");
        QString tail;
        for (const auto& [key, value] : added)
            tail += separator + (key.isNull() ? write(value, indent) : member(key, value, indent));
        if (!tail.isEmpty() || items.back().end != anchor.end)
            m_edits.append({anchor.end, items.back().end, tail});
        return true;
    }

    static bool isLast(const Node& node, int index) {
        for (int i = index + 1; i < node.members.size(); ++i)
            if (node.members[i].key == node.members[index].key)
                return false;
        return true;
    }

    int lineStart(int offset) const {
        return offset == 0 ? 0 : static_cast<int>(m_text.lastIndexOf(QLatin1Char('\n'), offset - 1)) + 1;
    }

    // The blanks that start the line holding offset.
    QString lineIndent(int offset) const {
        const int start = lineStart(offset);
        int end = start;
        while (end < m_text.size() && (m_text.at(end) == QLatin1Char(' ') || m_text.at(end) == QLatin1Char('\t')))
            ++end;
        return m_text.mid(start, end - start);
    }

    // Whether only blanks come before offset on its line.
    bool startsLine(int offset) const { return lineStart(offset) + lineIndent(offset).size() == offset; }

    // The file's indentation step: the blanks that start its first indented line, else Qt's four spaces.
    QString indentUnit() const {
        for (const QStringView line : QStringView(m_text).split(QLatin1Char('\n'))) {
            qsizetype blanks = 0;
            while (blanks < line.size() && (line[blanks] == QLatin1Char(' ') || line[blanks] == QLatin1Char('\t')))
                ++blanks;
            if (blanks > 0 && !line.mid(blanks).trimmed().isEmpty())
                return line.left(blanks).toString();
        }
        return QStringLiteral("    ");
    }

    QString member(const QString& key, const QJsonValue& value, const QString& indent) const {
        return write(QJsonValue(key), {}) + QStringLiteral(": ") + write(value, indent);
    }

    // A value as JSON: an object, or an array that holds any, over several lines indented by the file's step
    // from indent; anything else on one line.
    QString write(const QJsonValue& value, const QString& indent) const {
        const bool object = value.isObject();
        const QJsonArray array = value.toArray();
        const bool nested = object || std::any_of(array.begin(), array.end(), [](const QJsonValue& element) {
                                return element.isObject() || element.isArray();
                            });
        if (!nested && !value.isArray()) {
            const QByteArray json = QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact);
            return QString::fromUtf8(json.mid(1, json.size() - 2));
        }
        QStringList items;
        const QString inner = indent + m_unit;
        if (object) {
            const QJsonObject members = value.toObject();
            for (auto it = members.begin(); it != members.end(); ++it)
                items << member(it.key(), *it, inner);
        } else {
            for (const QJsonValue& element : array)
                items << write(element, inner);
        }
        const QString open = object ? QStringLiteral("{") : QStringLiteral("[");
        const QString close = object ? QStringLiteral("}") : QStringLiteral("]");
        if (items.isEmpty())
            return open + close;
        if (!nested)
            return open + items.join(QStringLiteral(", ")) + close;
        return open + m_newline + inner + items.join(QLatin1Char(',') + m_newline + inner) + m_newline + indent + close;
    }

    const QString& m_text;
    const QString m_unit;
    const QString m_newline;
    QVector<Edit> m_edits;
};

} // namespace

QString editJsonText(const QString& text, const QJsonObject& target) {
    const QJsonDocument document = QJsonDocument::fromJson(text.toUtf8());
    if (!document.isObject())
        return QString::fromUtf8(QJsonDocument(target).toJson(QJsonDocument::Indented));
    Reader reader(text);
    const Node* root = reader.read();
    Editor editor(text);
    editor.object(*root, document.object(), target);
    return editor.result();
}

} // namespace rankscope::gui
