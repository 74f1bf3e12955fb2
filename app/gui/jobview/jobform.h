// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"

#include <QHash>
#include <QJsonObject>
#include <QSet>
#include <QVector>
#include <QWidget>

#include <optional>

class QTableWidget;

namespace rankscope::gui {

// The job as a form. Every field is bound to the JSON path parseJob names it by ("trainer.epochs"), which is
// also the widget's objectName, so that an issue finds its field and a test finds its widget. The form holds
// raw values, invalid ones included (a port of 70000 must be shown to be marked): validation is parseJob's.
class JobForm final : public QWidget {
    Q_OBJECT

public:
    // Not a JSON path: "processes per node" sets procs on every node at once.
    static inline const QString kNodeProcsPath = QStringLiteral("nodes[*].procs");
    static inline const QString kEnvPath = QStringLiteral("env");

    explicit JobForm(QWidget* parent = nullptr);

    // Shows a job file's object as written; resolved (the parsed job, when valid) fills what needs merging,
    // such as the nodes' procs from node_defaults. Emits nothing.
    void fill(const QJsonObject& object, const std::optional<JobSpec>& resolved);
    // Writes the fields at these paths into object, as a user's edit of the JSON would.
    void patch(QJsonObject& object, const QSet<QString>& paths) const;

    // Marks each issue at its field (red frame, message as tooltip); returns the issues no field shows.
    QVector<JobIssue> markIssues(const QVector<JobIssue>& issues);
    // The field that shows path, or nullptr.
    [[nodiscard]] QWidget* fieldForPath(const QString& path) const;

signals:
    void edited(const QString& path); // the user changed the field at this path

private:
    enum class Kind { Text, Choice, Integer, Number };
    struct Field {
        QString path;
        Kind kind;
        QWidget* widget;
        QJsonValue defaultValue; // shown when the file leaves the field out
    };

    QWidget* addField(const QString& path, Kind kind, const QJsonValue& defaultValue,
                      const QStringList& choices = {}, const QString& unsetText = {});
    QWidget* buildEnvironment();
    void setFieldValue(const Field& field, const QJsonValue& value);
    [[nodiscard]] std::optional<QJsonValue> fieldValue(const Field& field) const; // nullopt: leave the file as is
    void fillEnvironment(const QJsonObject& env);
    [[nodiscard]] QJsonObject environment() const;
    void setInvalid(QWidget* widget, const QStringList& messages);

    QVector<Field> m_fields;
    QHash<QString, int> m_fieldIndex;
    QTableWidget* m_env = nullptr;
    QVector<QWidget*> m_marked;
};

} // namespace rankscope::gui
