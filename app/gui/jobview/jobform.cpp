// SPDX-License-Identifier: MIT
#include "jobform.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <QTableWidget>

namespace rankscope::gui {

namespace {

// Wide enough for every invalid value a user may type (a port of 70000, 0 epochs): parseJob judges them.
constexpr int kSpinMaximum = 999'999'999;
const QString kInvalidStyle = QStringLiteral("%1#%2 { border: 2px solid #d32f2f; border-radius: 3px; }");

QJsonValue valueAt(const QJsonObject& object, const QString& path) {
    const QStringList keys = path.split(QLatin1Char('.'));
    QJsonObject current = object;
    for (int i = 0; i + 1 < keys.size(); ++i)
        current = current.value(keys[i]).toObject();
    return current.value(keys.last());
}

// Sets (or, for an undefined value, removes) the member at a dotted path, creating the objects on the way.
void setValueAt(QJsonObject& object, const QStringList& keys, const QJsonValue& value) {
    if (keys.size() == 1) {
        if (value.isUndefined())
            object.remove(keys.front());
        else
            object.insert(keys.front(), value);
        return;
    }
    QJsonObject child = object.value(keys.front()).toObject();
    setValueAt(child, keys.mid(1), value);
    object.insert(keys.front(), child);
}

bool isComment(const QString& key) {
    return key.startsWith(QLatin1String("//"));
}

QString choiceText(const QJsonValue& value) {
    return value.isString() ? value.toString() : QString();
}

} // namespace

JobForm::JobForm(QWidget* parent) : QWidget(parent) {
    const JobSpec defaults;
    const TrainerSpec& trainer = defaults.trainer;

    auto* job = new QGroupBox(tr("Job"));
    auto* jobForm = new QFormLayout(job);
    jobForm->addRow(tr("Name"), addField(QStringLiteral("name"), Kind::Text, QString()));
    jobForm->addRow(tr("Mode"), addField(QStringLiteral("mode"), Kind::Choice, QStringLiteral("submit"),
                                         {QStringLiteral("submit"), QStringLiteral("debug")}));
    jobForm->addRow(tr("Launcher"), addField(QStringLiteral("launcher"), Kind::Choice, QStringLiteral("direct"),
                                             {QStringLiteral("direct"), QStringLiteral("torchrun")}));
    jobForm->addRow(tr("Deploy"),
                    addField(QStringLiteral("deploy"), Kind::Choice, QStringLiteral("auto"),
                             {QStringLiteral("auto"), QStringLiteral("build"), QStringLiteral("binary")}));
    jobForm->addRow(tr("Master port"), addField(QStringLiteral("master_port"), Kind::Integer, kDefaultMasterPort));
    jobForm->addRow(tr("Processes per node"),
                    addField(kNodeProcsPath, Kind::Integer, 0, {}, tr("as each node says")));

    auto* training = new QGroupBox(tr("Training"));
    auto* trainingForm = new QFormLayout(training);
    trainingForm->addRow(tr("Dataset"), addField(QStringLiteral("trainer.dataset"), Kind::Choice, trainer.dataset,
                                                 {QStringLiteral("synthetic"), QStringLiteral("fashion-mnist"),
                                                  QStringLiteral("mnist"), QStringLiteral("cifar10")}));
    trainingForm->addRow(tr("Data dir"), addField(QStringLiteral("trainer.data_dir"), Kind::Text, QString(), {},
                                                  tr("trainer default")));
    trainingForm->addRow(tr("Model"),
                         addField(QStringLiteral("trainer.model"), Kind::Choice, trainer.model,
                                  {QStringLiteral("cnn"), QStringLiteral("resnet18"), QStringLiteral("mlp")}));
    trainingForm->addRow(tr("Epochs"), addField(QStringLiteral("trainer.epochs"), Kind::Integer, trainer.epochs));
    trainingForm->addRow(tr("Batch size"),
                         addField(QStringLiteral("trainer.batch_size"), Kind::Integer, trainer.batchSize));
    trainingForm->addRow(tr("Learning rate"), addField(QStringLiteral("trainer.lr"), Kind::Number, QJsonValue::Undefined,
                                                       {}, tr("trainer default")));
    trainingForm->addRow(tr("Optimizer"), addField(QStringLiteral("trainer.optimizer"), Kind::Choice, QString(),
                                                   {QStringLiteral("adam"), QStringLiteral("sgd")},
                                                   tr("trainer default")));
    trainingForm->addRow(tr("Backend"), addField(QStringLiteral("trainer.backend"), Kind::Choice, QString(),
                                                 {QStringLiteral("gloo"), QStringLiteral("nccl")},
                                                 tr("trainer default")));
    trainingForm->addRow(tr("Device"), addField(QStringLiteral("trainer.device"), Kind::Choice, QString(),
                                                {QStringLiteral("cpu"), QStringLiteral("cuda")},
                                                tr("trainer default")));
    trainingForm->addRow(tr("Max steps"), addField(QStringLiteral("trainer.max_steps"), Kind::Integer,
                                                   trainer.maxSteps, {}, tr("no limit")));

    auto* debug = new QGroupBox(tr("Debug run"));
    auto* debugForm = new QFormLayout(debug);
    debugForm->addRow(tr("Node"), addField(QStringLiteral("debug.node"), Kind::Choice, defaults.debug.node,
                                           {QString(kLocalNodeName)}));
    debugForm->addRow(tr("Processes"), addField(QStringLiteral("debug.procs"), Kind::Integer, defaults.debug.procs));
    debugForm->addRow(tr("Max steps"), addField(QStringLiteral("debug.max_steps"), Kind::Integer,
                                                defaults.debug.maxSteps, {}, tr("no cap")));

    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(job, 0, 0);
    grid->addWidget(debug, 1, 0);
    grid->addWidget(training, 0, 1, 2, 1);
    grid->addWidget(buildEnvironment(), 2, 0, 1, 2);
    grid->setRowStretch(1, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
}

QWidget* JobForm::addField(const QString& path, Kind kind, const QJsonValue& defaultValue,
                           const QStringList& choices, const QString& unsetText) {
    QWidget* widget = nullptr;
    switch (kind) {
    case Kind::Text:
    case Kind::Number: {
        auto* edit = new QLineEdit;
        edit->setPlaceholderText(unsetText);
        if (kind == Kind::Number)
            edit->setValidator(new QRegularExpressionValidator(
                QRegularExpression(QStringLiteral("-?[0-9]*\\.?[0-9]*([eE][-+]?[0-9]*)?")), edit));
        connect(edit, &QLineEdit::textEdited, this, [this, path] { emit edited(path); });
        widget = edit;
        break;
    }
    case Kind::Choice: {
        auto* combo = new QComboBox;
        combo->setEditable(true); // a value the list does not know must still be shown, and marked
        combo->addItems(choices);
        combo->setInsertPolicy(QComboBox::NoInsert);
        combo->lineEdit()->setPlaceholderText(unsetText);
        connect(combo, &QComboBox::currentTextChanged, this, [this, path] { emit edited(path); });
        widget = combo;
        break;
    }
    case Kind::Integer: {
        auto* spin = new QSpinBox;
        spin->setRange(0, kSpinMaximum);
        spin->setSpecialValueText(unsetText);
        spin->setAccelerated(true);
        connect(spin, &QSpinBox::valueChanged, this, [this, path] { emit edited(path); });
        widget = spin;
        break;
    }
    }
    widget->setObjectName(path);
    m_fieldIndex.insert(path, static_cast<int>(m_fields.size()));
    m_fields.append(Field{path, kind, widget, defaultValue});
    return widget;
}

QWidget* JobForm::buildEnvironment() {
    auto* box = new QGroupBox(tr("Environment (every rank)"));
    auto* layout = new QHBoxLayout(box);
    m_env = new QTableWidget(0, 2);
    m_env->setObjectName(kEnvPath);
    m_env->setHorizontalHeaderLabels({tr("Variable"), tr("Value")});
    m_env->horizontalHeader()->setStretchLastSection(true);
    m_env->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Interactive);
    m_env->setColumnWidth(0, 200);
    m_env->verticalHeader()->hide();
    m_env->setMinimumHeight(110);
    m_env->setMaximumHeight(180);
    connect(m_env, &QTableWidget::itemChanged, this, [this] { emit edited(kEnvPath); });
    auto* buttons = new QVBoxLayout;
    auto* add = new QPushButton(tr("Add"));
    auto* remove = new QPushButton(tr("Remove"));
    connect(add, &QPushButton::clicked, this, [this] {
        const int row = m_env->rowCount();
        m_env->insertRow(row);
        m_env->setCurrentCell(row, 0);
        m_env->editItem(m_env->item(row, 0));
    });
    connect(remove, &QPushButton::clicked, this, [this] {
        if (m_env->currentRow() < 0)
            return;
        m_env->removeRow(m_env->currentRow());
        emit edited(kEnvPath);
    });
    buttons->addWidget(add);
    buttons->addWidget(remove);
    buttons->addStretch();
    layout->addWidget(m_env);
    layout->addLayout(buttons);
    return box;
}

void JobForm::fill(const QJsonObject& object, const std::optional<JobSpec>& resolved) {
    // The debug node may be any node's name.
    auto* debugNode = qobject_cast<QComboBox*>(fieldForPath(QStringLiteral("debug.node")));
    QStringList names{QString(kLocalNodeName)};
    if (resolved) {
        for (const NodeSpec& node : resolved->nodes)
            names << node.name;
    } else {
        for (const QJsonValue& node : object.value(QStringLiteral("nodes")).toArray())
            names << node.toObject().value(QStringLiteral("name")).toString(
                node.toObject().value(QStringLiteral("host")).toString());
    }
    {
        const QSignalBlocker blocker(debugNode);
        const QString text = debugNode->currentText();
        debugNode->clear();
        debugNode->addItems(names);
        debugNode->setEditText(text);
    }

    for (const Field& field : std::as_const(m_fields)) {
        QJsonValue value = valueAt(object, field.path);
        if (field.path == kNodeProcsPath) {
            QSet<int> procs;
            if (resolved) {
                for (const NodeSpec& node : resolved->nodes)
                    procs.insert(node.procs);
            } else {
                for (const QJsonValue& node : object.value(QStringLiteral("nodes")).toArray())
                    procs.insert(node.toObject().value(QStringLiteral("procs")).toInt(0));
            }
            value = procs.size() == 1 ? QJsonValue(*procs.cbegin()) : QJsonValue(0);
        }
        setFieldValue(field, value.isUndefined() ? field.defaultValue : value);
    }
    fillEnvironment(object.value(kEnvPath).toObject());
}

void JobForm::setFieldValue(const Field& field, const QJsonValue& value) {
    const QSignalBlocker blocker(field.widget);
    switch (field.kind) {
    case Kind::Text: {
        auto* edit = static_cast<QLineEdit*>(field.widget);
        if (edit->text() != choiceText(value)) // unchanged text keeps its cursor
            edit->setText(choiceText(value));
        break;
    }
    case Kind::Number: {
        auto* edit = static_cast<QLineEdit*>(field.widget);
        const QString text = value.isDouble() ? QString::number(value.toDouble()) : QString();
        if (!value.isDouble() || edit->text().toDouble() != value.toDouble())
            edit->setText(text);
        break;
    }
    case Kind::Choice: {
        auto* combo = static_cast<QComboBox*>(field.widget);
        if (combo->currentText() != choiceText(value))
            combo->setEditText(choiceText(value));
        break;
    }
    case Kind::Integer:
        static_cast<QSpinBox*>(field.widget)->setValue(value.isDouble() ? qRound(value.toDouble()) : 0);
        break;
    }
}

std::optional<QJsonValue> JobForm::fieldValue(const Field& field) const {
    switch (field.kind) {
    case Kind::Text:
    case Kind::Choice: {
        const QString text = field.kind == Kind::Text ? static_cast<QLineEdit*>(field.widget)->text()
                                                      : static_cast<QComboBox*>(field.widget)->currentText();
        // An empty field means "unset": the key goes, and the default applies.
        return text.isEmpty() ? QJsonValue(QJsonValue::Undefined) : QJsonValue(text);
    }
    case Kind::Number: {
        const QString text = static_cast<QLineEdit*>(field.widget)->text();
        if (text.isEmpty())
            return QJsonValue(QJsonValue::Undefined);
        bool ok = false;
        const double number = text.toDouble(&ok);
        if (!ok)
            return std::nullopt; // half typed ("1e"): the file keeps its value until the number is complete
        return QJsonValue(number);
    }
    case Kind::Integer:
        return QJsonValue(static_cast<QSpinBox*>(field.widget)->value());
    }
    return std::nullopt;
}

void JobForm::patch(QJsonObject& object, const QSet<QString>& paths) const {
    for (const QString& path : paths) {
        if (path == kEnvPath) {
            QJsonObject env = environment();
            const QJsonObject written = object.value(kEnvPath).toObject();
            for (auto it = written.begin(); it != written.end(); ++it)
                if (isComment(it.key())) // not in the table, but the file's: it stays
                    env.insert(it.key(), *it);
            if (env.isEmpty())
                object.remove(kEnvPath);
            else
                object.insert(kEnvPath, env);
            continue;
        }
        const auto index = m_fieldIndex.constFind(path);
        if (index == m_fieldIndex.cend())
            continue;
        const std::optional<QJsonValue> value = fieldValue(m_fields[*index]);
        if (!value)
            continue;
        if (path == kNodeProcsPath) {
            if (value->toInt() <= 0)
                continue; // "as each node says": nothing to write
            QJsonArray nodes = object.value(QStringLiteral("nodes")).toArray();
            for (auto node = nodes.begin(); node != nodes.end(); ++node) {
                QJsonObject spec = node->toObject();
                spec.insert(QStringLiteral("procs"), *value);
                *node = spec;
            }
            object.insert(QStringLiteral("nodes"), nodes);
            if (object.value(QStringLiteral("node_defaults")).toObject().contains(QStringLiteral("procs")))
                setValueAt(object, {QStringLiteral("node_defaults"), QStringLiteral("procs")}, *value);
            continue;
        }
        setValueAt(object, path.split(QLatin1Char('.')), *value);
    }
}

void JobForm::fillEnvironment(const QJsonObject& env) {
    const QSignalBlocker blocker(m_env);
    m_env->setRowCount(0);
    for (auto it = env.begin(); it != env.end(); ++it) {
        if (isComment(it.key()))
            continue;
        const int row = m_env->rowCount();
        m_env->insertRow(row);
        m_env->setItem(row, 0, new QTableWidgetItem(it.key()));
        m_env->setItem(row, 1, new QTableWidgetItem(it.value().toVariant().toString()));
    }
}

QJsonObject JobForm::environment() const {
    QJsonObject env;
    for (int row = 0; row < m_env->rowCount(); ++row) {
        const QTableWidgetItem* name = m_env->item(row, 0);
        const QTableWidgetItem* value = m_env->item(row, 1);
        if (name && !name->text().trimmed().isEmpty())
            env.insert(name->text().trimmed(), value ? value->text() : QString());
    }
    return env;
}

QWidget* JobForm::fieldForPath(const QString& path) const {
    if (const auto index = m_fieldIndex.constFind(path); index != m_fieldIndex.cend())
        return m_fields[*index].widget;
    static const QRegularExpression nodeProcs(QStringLiteral("^(nodes\\[\\d+\\]|node_defaults)\\.procs$"));
    if (nodeProcs.match(path).hasMatch())
        return m_fields[m_fieldIndex.value(kNodeProcsPath)].widget;
    if (path == kEnvPath || path.startsWith(kEnvPath + QLatin1Char('.')))
        return m_env;
    return nullptr;
}

void JobForm::setInvalid(QWidget* widget, const QStringList& messages) {
    const bool invalid = !messages.isEmpty();
    widget->setProperty("invalid", invalid);
    widget->setToolTip(messages.join(QLatin1Char('\n')));
    widget->setStyleSheet(invalid ? kInvalidStyle.arg(QString::fromLatin1(widget->metaObject()->className()),
                                                      widget->objectName())
                                  : QString());
}

QVector<JobIssue> JobForm::markIssues(const QVector<JobIssue>& issues) {
    for (QWidget* widget : std::as_const(m_marked))
        setInvalid(widget, {});
    m_marked.clear();
    for (int row = 0; row < m_env->rowCount(); ++row)
        if (QTableWidgetItem* name = m_env->item(row, 0)) {
            const QSignalBlocker blocker(m_env);
            name->setData(Qt::BackgroundRole, QVariant());
            name->setToolTip(QString());
        }

    QHash<QWidget*, QStringList> messages;
    QVector<JobIssue> elsewhere;
    for (const JobIssue& issue : issues) {
        QWidget* widget = fieldForPath(issue.path);
        if (!widget) {
            elsewhere << issue;
            continue;
        }
        messages[widget] << issue.toString();
        if (widget == m_env)
            for (int row = 0; row < m_env->rowCount(); ++row)
                if (QTableWidgetItem* name = m_env->item(row, 0);
                    name && issue.path == kEnvPath + QLatin1Char('.') + name->text().trimmed()) {
                    const QSignalBlocker blocker(m_env);
                    name->setBackground(QColor(0xff, 0xeb, 0xee));
                    name->setToolTip(issue.message);
                }
    }
    for (auto it = messages.cbegin(); it != messages.cend(); ++it) {
        setInvalid(it.key(), it.value());
        m_marked << it.key();
    }
    return elsewhere;
}

} // namespace rankscope::gui
