// SPDX-License-Identifier: MIT
// The job editor as a user drives it: typing in the form and in the JSON, opening and saving files.
#include "jobeditor.h"

#include "core/jobspec.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QToolButton>
#include <QtTest>

using rankscope::gui::JobEditor;

namespace {

const QString kExample = QStringLiteral(RANKSCOPE_JOBS_DIR "/example.json");

QByteArray readAll(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

QListWidgetItem* issueItem(const JobEditor& editor, const QString& path) {
    auto* list = editor.findChild<QListWidget*>(QStringLiteral("issues"));
    for (int row = 0; list && row < list->count(); ++row)
        if (list->item(row)->data(Qt::UserRole).toString() == path)
            return list->item(row);
    return nullptr;
}

template <typename Widget> Widget* field(const JobEditor& editor, const char* path) {
    auto* widget = editor.findChild<Widget*>(QString::fromLatin1(path));
    if (!widget)
        qFatal("no field %s", path);
    return widget;
}

QPushButton* button(const JobEditor& editor, const char* text) {
    for (auto* candidate : editor.findChildren<QPushButton*>())
        if (candidate->text() == QLatin1String(text))
            return candidate;
    qFatal("no button %s", text);
}

QMenu* recentMenu(const JobEditor& editor) {
    for (auto* candidate : editor.findChildren<QToolButton*>())
        if (candidate->text() == QLatin1String("Recent"))
            return candidate->menu();
    qFatal("no Recent button");
}

QStringList itemTexts(const QComboBox* combo) {
    QStringList texts;
    for (int i = 0; i < combo->count(); ++i)
        texts << combo->itemText(i);
    return texts;
}

// The example job's text with the first `from` replaced.
QString exampleWith(const QString& from, const QString& to) {
    QString text = QString::fromUtf8(readAll(kExample));
    const qsizetype at = text.indexOf(from);
    if (at < 0)
        qFatal("not in the example: %s", qPrintable(from));
    return text.replace(at, from.size(), to);
}

QJsonObject jsonObject(const JobEditor& editor) {
    return QJsonDocument::fromJson(editor.jsonText().toUtf8()).object();
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size())
        qFatal("cannot write %s", qPrintable(path));
}

// As a user's typing in a cell does: the item's text changes.
void setCell(QTableWidget* table, int row, int column, const QString& text) {
    if (!table->item(row, column))
        table->setItem(row, column, new QTableWidgetItem);
    table->item(row, column)->setText(text);
}

} // namespace

class tst_JobEditor final : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    void open(JobEditor& editor, const QString& path = kExample) {
        QString error;
        QVERIFY2(editor.openFile(path, &error), qPrintable(error));
        QVERIFY2(editor.isValid(), qPrintable(editor.issues().value(0).toString()));
    }

    // Types into the JSON at the start of the first match of `at`, replacing `remove` characters.
    static void typeInJson(QPlainTextEdit* json, const QString& at, int remove, const QString& text) {
        const int position = static_cast<int>(json->toPlainText().indexOf(at));
        QVERIFY2(position >= 0, qPrintable(at));
        QTextCursor cursor = json->textCursor();
        cursor.setPosition(position);
        json->setTextCursor(cursor);
        for (int i = 0; i < remove; ++i)
            QTest::keyClick(json, Qt::Key_Delete);
        QTest::keyClicks(json, text);
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_dir.filePath(QStringLiteral("settings")));
        QCoreApplication::setOrganizationName(QStringLiteral("RankScopeTest"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_jobeditor"));
    }

    void startsWithAValidJob() {
        JobEditor editor;
        QVERIFY(editor.isValid());
        QVERIFY(editor.job().has_value());
        QCOMPARE(editor.job()->mode, rankscope::RunMode::Debug);
    }

    void portOutOfRangeIsShownAtItsField() {
        JobEditor editor;
        open(editor);
        QSignalSpy validity(&editor, &JobEditor::validityChanged);
        auto* port = editor.findChild<QSpinBox*>(QStringLiteral("master_port"));
        QVERIFY(port);
        QCOMPARE(port->value(), 29500);
        QVERIFY(!port->property("invalid").toBool());
        QTest::keyClick(port, Qt::Key_A, Qt::ControlModifier);
        QTest::keyClicks(port, QStringLiteral("70000"));
        QCOMPARE(port->value(), 70000);

        QTRY_VERIFY(port->property("invalid").toBool());
        QVERIFY2(port->toolTip().contains(QLatin1String("master_port: must be 1-65535")), qPrintable(port->toolTip()));
        QVERIFY(editor.jsonText().contains(QLatin1String("\"master_port\": 70000")));
        QVERIFY(!editor.job().has_value());
        QCOMPARE(validity.size(), 1);
        QCOMPARE(validity.front().front().toBool(), false);
        QListWidgetItem* item = issueItem(editor, QStringLiteral("master_port"));
        QVERIFY(item);
        QVERIFY(item->text().contains(QLatin1String("1-65535")));
        // Only that field is marked.
        QVERIFY(!editor.findChild<QSpinBox*>(QStringLiteral("trainer.epochs"))->property("invalid").toBool());

        // Clicking the issue focuses the field.
        editor.show();
        QVERIFY(QTest::qWaitForWindowActive(&editor));
        editor.findChild<QPlainTextEdit*>(QStringLiteral("json"))->setFocus();
        auto* list = editor.findChild<QListWidget*>(QStringLiteral("issues"));
        QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualItemRect(item).center());
        QTRY_COMPARE(QApplication::focusWidget(), port);

        port->setValue(29501);
        QTRY_VERIFY(!port->property("invalid").toBool());
        QVERIFY(editor.job().has_value());
        QCOMPARE(editor.job()->masterPort, 29501);
        QCOMPARE(validity.size(), 2);
        QVERIFY(port->toolTip().isEmpty());
    }

    void jsonEditRefreshesTheFormAndKeepsTheCursor() {
        JobEditor editor;
        open(editor);
        auto* json = editor.findChild<QPlainTextEdit*>(QStringLiteral("json"));
        auto* epochs = editor.findChild<QSpinBox*>(QStringLiteral("trainer.epochs"));
        QCOMPARE(epochs->value(), 2);
        typeInJson(json, QStringLiteral("2,\n    \"batch_size\""), 1, QStringLiteral("17"));
        const int cursor = json->textCursor().position();
        const QString typed = json->toPlainText();
        QTRY_COMPARE(epochs->value(), 17);
        QCOMPARE(editor.job()->trainer.epochs, 17);
        QCOMPARE(json->textCursor().position(), cursor);
        QCOMPARE(json->toPlainText(), typed); // the form did not rewrite what the user typed

        // A value the form's list does not know is shown as written, and marked.
        typeInJson(json, QStringLiteral("\"cifar10\""), 9, QStringLiteral("\"imagenet\""));
        auto* dataset = editor.findChild<QComboBox*>(QStringLiteral("trainer.dataset"));
        QTRY_COMPARE(dataset->currentText(), QStringLiteral("imagenet"));
        QTRY_VERIFY(dataset->property("invalid").toBool());
        QVERIFY(dataset->toolTip().startsWith(QLatin1String("trainer.dataset:")));
        QVERIFY(!editor.isValid());
    }

    void formEditRewritesTheJson() {
        JobEditor editor;
        open(editor);
        QSignalSpy changed(&editor, &JobEditor::jobChanged);
        auto* name = editor.findChild<QLineEdit*>(QStringLiteral("name"));
        QTest::keyClicks(name, QStringLiteral("-v2"));
        QTRY_VERIFY(editor.jsonText().contains(QLatin1String("\"name\": \"resnet18-cifar10-2x2-v2\"")));
        QVERIFY(!changed.isEmpty());
        QCOMPARE(editor.job()->name, QStringLiteral("resnet18-cifar10-2x2-v2"));
        // The file as written, changed only there: its order, comments and blank lines stay.
        const QString renamed = exampleWith(QStringLiteral("2x2\""), QStringLiteral("2x2-v2\""));
        QCOMPARE(editor.jsonText(), renamed);

        auto* optimizer = editor.findChild<QComboBox*>(QStringLiteral("trainer.optimizer"));
        optimizer->setCurrentText(QStringLiteral("sgd"));
        QTRY_COMPARE(editor.job()->trainer.optimizer, QStringLiteral("sgd"));
        optimizer->setCurrentText(QString()); // empty: back to the trainer's default, the key goes
        QTRY_VERIFY(editor.job()->trainer.optimizer.isEmpty());
        QCOMPARE(editor.jsonText(), QString(renamed).remove(QStringLiteral("    \"optimizer\": \"adam\",\n")));

        auto* procs = editor.findChild<QSpinBox*>(QStringLiteral("nodes[*].procs"));
        QCOMPARE(procs->value(), 2);
        procs->setValue(3); // more than the 2 GPUs: each node's procs is marked
        QTRY_VERIFY(procs->property("invalid").toBool());
        QVERIFY2(procs->toolTip().contains(QLatin1String("nodes[0].procs")), qPrintable(procs->toolTip()));
    }

    void environmentTableEditsEnv() {
        JobEditor editor;
        open(editor);
        auto* env = editor.findChild<QTableWidget*>(QStringLiteral("env"));
        QVERIFY(env);
        QCOMPARE(env->rowCount(), 2);
        QCOMPARE(env->item(0, 0)->text(), QStringLiteral("NCCL_SOCKET_IFNAME"));
        env->item(1, 0)->setText(QStringLiteral("1BAD"));
        QTRY_VERIFY(env->property("invalid").toBool());
        QVERIFY(env->toolTip().contains(QLatin1String("env.1BAD")));
        env->item(1, 0)->setText(QStringLiteral("OMP_NUM_THREADS"));
        env->item(1, 1)->setText(QStringLiteral("8"));
        QTRY_VERIFY(editor.isValid());
        const QList<QPair<QString, QString>> expected{{"NCCL_SOCKET_IFNAME", "eth0"}, {"OMP_NUM_THREADS", "8"}};
        QCOMPARE(editor.job()->env, expected);
    }

    void issueWithoutAFieldMovesTheJsonCursor() {
        JobEditor editor;
        editor.setJsonText(QString::fromUtf8(readAll(kExample)).replace(QLatin1String("2222"), QLatin1String("0")));
        QListWidgetItem* item = issueItem(editor, QStringLiteral("nodes[1].port"));
        QVERIFY(item);
        auto* list = editor.findChild<QListWidget*>(QStringLiteral("issues"));
        emit list->itemClicked(item);
        auto* json = editor.findChild<QPlainTextEdit*>(QStringLiteral("json"));
        QCOMPARE(json->textCursor().block().text().trimmed(), QStringLiteral("\"port\": 0,"));
        QCOMPARE(item->toolTip(), QStringLiteral("Shown in the JSON: no field of the form holds it"));
    }

    void syntaxErrorDisablesTheFormUntilFixed() {
        JobEditor editor;
        open(editor);
        editor.setJsonText(QStringLiteral("{\n  \"name\": \"x\",\n  oops\n}\n"));
        QVERIFY(!editor.isValid());
        QCOMPARE(editor.issues().size(), 1);
        QVERIFY(editor.issues().front().path.isEmpty());
        QVERIFY(editor.issues().front().message.contains(QLatin1String("3:")));
        auto* name = editor.findChild<QLineEdit*>(QStringLiteral("name"));
        QVERIFY(!name->isEnabled());
        auto* banner = editor.findChild<QLabel*>(QStringLiteral("syntaxBanner"));
        QVERIFY(!banner->isHidden());

        // The error's line is marked, and a click on it puts the cursor at its line and column.
        auto* json = editor.findChild<QPlainTextEdit*>(QStringLiteral("json"));
        QCOMPARE(json->extraSelections().size(), 1);
        QCOMPARE(json->extraSelections().front().cursor.blockNumber(), 2);
        const QRegularExpressionMatch at =
            QRegularExpression(QStringLiteral(" at 3:(\\d+)")).match(editor.issues().front().message);
        QVERIFY2(at.hasMatch(), qPrintable(editor.issues().front().message));
        const int column = at.captured(1).toInt();
        QVERIFY(column > 1);
        editor.show();
        QVERIFY(QTest::qWaitForWindowActive(&editor));
        auto* list = editor.findChild<QListWidget*>(QStringLiteral("issues"));
        list->setFocus();
        emit list->itemClicked(list->item(0));
        QCOMPARE(json->textCursor().blockNumber(), 2);
        QCOMPARE(json->textCursor().positionInBlock(), column - 1);
        QTRY_COMPARE(QApplication::focusWidget(), json);

        editor.setJsonText(QStringLiteral("{\"name\": \"fixed\", \"mode\": \"debug\"}"));
        QVERIFY(editor.isValid());
        QVERIFY(banner->isHidden());
        QVERIFY(json->extraSelections().isEmpty());
        QVERIFY(name->isEnabled());
        QCOMPARE(name->text(), QStringLiteral("fixed"));
    }

    void anyTextIsSurvived_data() {
        QTest::addColumn<QString>("text");
        QTest::newRow("empty") << QString();
        QTest::newRow("array") << QStringLiteral("[]");
        QTest::newRow("null") << QStringLiteral("null");
        QTest::newRow("nodes not an array") << QStringLiteral("{\"nodes\": 5, \"trainer\": 3, \"env\": []}");
        QTest::newRow("wrong types") << QStringLiteral("{\"master_port\": \"x\", \"trainer\": {\"epochs\": [1]},"
                                                       " \"debug\": {\"node\": 4}, \"env\": {\"A\": {}}}");
        QTest::newRow("deep") << QString(2000, QLatin1Char('[')) + QString(2000, QLatin1Char(']'));
        QTest::newRow("binary") << QString::fromLatin1(QByteArray("\x00\xff{\"\x01", 5));
        const QString example = QString::fromUtf8(readAll(kExample));
        for (int cut = 1; cut < example.size(); cut += 97)
            QTest::newRow(qPrintable(QStringLiteral("cut at %1").arg(cut))) << example.left(cut);
    }

    void anyTextIsSurvived() {
        QFETCH(QString, text);
        JobEditor editor;
        editor.setJsonText(text);
        QVERIFY(!editor.isValid());
        QVERIFY(!editor.issues().isEmpty());
        auto* list = editor.findChild<QListWidget*>(QStringLiteral("issues"));
        QCOMPARE(list->count(), editor.issues().size());
        for (int row = 0; row < list->count(); ++row)
            emit list->itemClicked(list->item(row));
        // The form still writes something sensible into whatever object there is.
        editor.findChild<QSpinBox*>(QStringLiteral("trainer.epochs"))->setValue(3);
        QTest::qWait(JobEditor::kValidationDelayMs + 50);
    }

    // The form's edits are written once: a later edit of the same value in the JSON stays.
    void aJsonEditAfterAFormEditStays() {
        JobEditor editor;
        open(editor);
        QTest::keyClicks(field<QLineEdit>(editor, "name"), QStringLiteral("-v2"));
        QTRY_COMPARE(editor.job()->name, QStringLiteral("resnet18-cifar10-2x2-v2"));
        typeInJson(editor.findChild<QPlainTextEdit*>(QStringLiteral("json")), QStringLiteral("-v2"), 3,
                   QStringLiteral("-v3"));
        QTRY_COMPARE(editor.job()->name, QStringLiteral("resnet18-cifar10-2x2-v3"));
        QTest::qWait(JobEditor::kValidationDelayMs + 50);
        QCOMPARE(editor.job()->name, QStringLiteral("resnet18-cifar10-2x2-v3"));
        QCOMPARE(field<QLineEdit>(editor, "name")->text(), QStringLiteral("resnet18-cifar10-2x2-v3"));
    }

    void nodeTableEditsAreWrittenAsTheFormsAre() {
        JobEditor editor;
        open(editor);
        QVector<rankscope::NodeSpec> nodes = editor.job()->nodes;
        nodes[1].port = 2223;
        QVERIFY(editor.setNodes(nodes));
        QCOMPARE(editor.jsonText(), exampleWith(QStringLiteral("2222"), QStringLiteral("2223")));

        // A field the node leaves to node_defaults is written into that node alone.
        nodes[0].user = QStringLiteral("alice");
        QVERIFY(editor.setNodes(nodes));
        QCOMPARE(jsonObject(editor)["nodes"][0][QLatin1String("user")].toString(), QStringLiteral("alice"));
        QCOMPARE(jsonObject(editor)["node_defaults"][QLatin1String("user")].toString(), QStringLiteral("trainer"));
        QCOMPARE(editor.job()->nodes[1].user, QStringLiteral("trainer"));

        rankscope::NodeSpec added;
        added.host = QStringLiteral("gpu-c");
        added.gpus = 2;
        nodes << added;
        QVERIFY(editor.setNodes(nodes));
        QCOMPARE(editor.job()->nodes.size(), 3);
        QCOMPARE(editor.job()->nodes[2].host, QStringLiteral("gpu-c"));
        QVERIFY(editor.jsonText().contains(QLatin1String("\"//address\"")));
        nodes = editor.job()->nodes; // as the table has them next: resolved (gpu-c's user from node_defaults)

        // The first removed: the second's object stays as written, with its comment.
        nodes.removeFirst();
        QVERIFY(editor.setNodes(nodes));
        QCOMPARE(editor.job()->nodes.size(), 2);
        QCOMPARE(editor.job()->nodes[0].port, 2223);
        QVERIFY(!editor.jsonText().contains(QLatin1String("gpu-a.example.org")));
        QVERIFY(editor.jsonText().contains(QStringLiteral( // as written, where it was
            "  \"nodes\": [\n    {\n      \"host\": \"gpu-b\",\n      \"//host\": \"A ~/.ssh/config alias works as "
            "well;")));
        QVERIFY(!jsonObject(editor)["nodes"][0].toObject().contains(QStringLiteral("user"))); // still node_defaults'

        QVERIFY(editor.jsonText().contains(QLatin1String("\"//mode\"")));
        QCOMPARE(editor.job()->nodes, nodes);

        // A field cleared goes from the node's object; a form edit still pending is written first.
        nodes[0].address.clear();
        QTest::keyClicks(field<QLineEdit>(editor, "name"), QStringLiteral("-v2"));
        QVERIFY(editor.setNodes(nodes));
        QVERIFY(!jsonObject(editor)["nodes"][0].toObject().contains(QStringLiteral("address")));
        QCOMPARE(editor.job()->name, QStringLiteral("resnet18-cifar10-2x2-v2"));

        // A job without nodes gets none written.
        const QString local = QStringLiteral("{\"name\": \"m\", \"mode\": \"debug\"}");
        editor.setJsonText(local);
        QVERIFY(editor.setNodes({}));
        QCOMPARE(editor.jsonText(), local);
    }

    void nodesOfAHostfileAreWrittenOutOnceOneChanges() {
        const QString dir = m_dir.filePath(QStringLiteral("hostnodes"));
        QVERIFY(QDir().mkpath(dir));
        writeFile(dir + QStringLiteral("/hosts"), "worker-1 slots=2\nworker-2 slots=2\n");
        writeFile(dir + QStringLiteral("/job.json"),
                  "{\"name\": \"h\", \"mode\": \"submit\", \"hostfile\": \"hosts\",\n"
                  " \"nodes\": [{\"//\": \"the head\", \"host\": \"head\", \"gpus\": 2}]}");
        JobEditor editor;
        open(editor, dir + QStringLiteral("/job.json"));
        QVector<rankscope::NodeSpec> nodes = editor.job()->nodes;
        QCOMPARE(nodes.size(), 3);
        nodes[0].port = 2200; // the written node: the hostfile stays
        QVERIFY(editor.setNodes(nodes));
        QVERIFY(jsonObject(editor).contains(QStringLiteral("hostfile")));
        QVERIFY(editor.jsonText().contains(QLatin1String("the head")));
        QCOMPARE(editor.job()->nodes, nodes);

        nodes[2].port = 2201; // a node of the hostfile: every node written out
        QVERIFY(editor.setNodes(nodes));
        QVERIFY(!jsonObject(editor).contains(QStringLiteral("hostfile")));
        QCOMPARE(jsonObject(editor)["nodes"].toArray().size(), 3);
        QVERIFY2(editor.isValid(), qPrintable(editor.issues().value(0).toString()));
        QCOMPARE(editor.job()->nodes, nodes);

        // A node added to a job with a hostfile comes last, after the hostfile's nodes, as in the table.
        open(editor, dir + QStringLiteral("/job.json"));
        nodes = editor.job()->nodes;
        rankscope::NodeSpec added;
        added.host = QStringLiteral("late");
        nodes << added;
        QVERIFY(editor.setNodes(nodes));
        QVERIFY(!jsonObject(editor).contains(QStringLiteral("hostfile")));
        QCOMPARE(editor.job()->nodes.size(), 4);
        QCOMPARE(editor.job()->nodes[2].host, QStringLiteral("worker-2"));
        QCOMPARE(editor.job()->nodes[3].host, QStringLiteral("late"));
    }

    void nodesOfAJobWithAProblemLeaveTheRestAlone() {
        JobEditor editor;
        editor.setJsonText(exampleWith(QStringLiteral("29500"), QStringLiteral("70000")));
        QVERIFY(!editor.isValid());
        rankscope::NodeSpec node;
        node.host = QStringLiteral("solo");
        QVERIFY(editor.setNodes({node}));
        const QJsonObject written = jsonObject(editor);
        QCOMPARE(written["master_port"].toInt(), 70000);
        QCOMPARE(written["name"].toString(), QStringLiteral("resnet18-cifar10-2x2"));
        QCOMPARE(written["nodes"].toArray().size(), 1);
        QVERIFY(editor.jsonText().contains(QLatin1String("\"//mode\"")));

        editor.setJsonText(QStringLiteral("{ oops"));
        QVERIFY(!editor.setNodes({node}));
        QCOMPARE(editor.jsonText(), QStringLiteral("{ oops"));
    }

    void openSaveRoundTrip() {
        JobEditor editor;
        open(editor);
        const QString copy = m_dir.filePath(QStringLiteral("roundtrip/example.json"));
        QVERIFY(QDir().mkpath(QFileInfo(copy).absolutePath()));
        QString error;
        QVERIFY2(editor.saveFile(copy, &error), qPrintable(error));
        QCOMPARE(readAll(copy), readAll(kExample));
        QCOMPARE(QDir(QFileInfo(copy).absolutePath()).entryList(QDir::Files), QStringList{"example.json"});
        QCOMPARE(editor.filePath(), QFileInfo(copy).absoluteFilePath());

        JobEditor reopened;
        open(reopened, copy);
        const rankscope::JobParseResult original = rankscope::loadJobFile(kExample);
        QVERIFY(original.ok());
        QVERIFY(*reopened.job() == *original.job);

        QVERIFY(!editor.saveFile(m_dir.filePath(QStringLiteral("no/such/dir/x.json")), &error));
        QVERIFY(error.contains(QLatin1String("x.json")));
        QVERIFY(!editor.openFile(m_dir.filePath(QStringLiteral("absent.json")), &error));
        QVERIFY(error.contains(QLatin1String("absent.json")));
    }

    void recentJobsAreRememberedAndBounded() {
        QSettings().remove(QStringLiteral("jobview/recentJobs"));
        const QByteArray text = readAll(kExample);
        QStringList paths;
        for (int i = 0; i < 12; ++i) {
            const QString path = m_dir.filePath(QStringLiteral("recent/job%1.json").arg(i));
            QDir().mkpath(QFileInfo(path).absolutePath());
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(text);
            paths << QFileInfo(path).absoluteFilePath();
        }
        {
            JobEditor editor;
            for (const QString& path : std::as_const(paths))
                open(editor, path);
            QCOMPARE(editor.recentJobs().size(), JobEditor::kMaxRecentJobs);
            QCOMPARE(editor.recentJobs().front(), paths.last());
            QVERIFY(!editor.recentJobs().contains(paths.front()));
            open(editor, paths[5]); // opened again: to the front, once
            QCOMPARE(editor.recentJobs().front(), paths[5]);
            QCOMPARE(editor.recentJobs().count(paths[5]), 1);
            QString error;
            const QString saved = QFileInfo(m_dir.filePath(QStringLiteral("recent/saved.json"))).absoluteFilePath();
            QVERIFY(editor.saveFile(saved, &error));
            QCOMPARE(editor.recentJobs().front(), saved);
        }
        JobEditor later; // a new editor (a new session) sees the same list
        QCOMPARE(later.recentJobs().size(), JobEditor::kMaxRecentJobs);
        QCOMPARE(later.recentJobs()[1], paths[5]);
    }

    void fieldsLeftOutShowTheirDefaults() {
        JobEditor editor;
        editor.setJsonText(QStringLiteral("{\"name\": \"m\", \"mode\": \"debug\", \"master_port\": \"x\"}"));
        QCOMPARE(field<QComboBox>(editor, "launcher")->currentText(), QStringLiteral("direct"));
        QCOMPARE(field<QComboBox>(editor, "deploy")->currentText(), QStringLiteral("auto"));
        QCOMPARE(field<QSpinBox>(editor, "trainer.epochs")->value(), rankscope::TrainerSpec().epochs);
        // A port that is no number shows no number, and is marked.
        auto* port = field<QSpinBox>(editor, "master_port");
        QCOMPARE(port->value(), 0);
        QVERIFY(port->property("invalid").toBool());
        // Unset fields say what applies instead.
        QCOMPARE(field<QSpinBox>(editor, "nodes[*].procs")->text(), QStringLiteral("as each node says"));
        QCOMPARE(field<QSpinBox>(editor, "trainer.max_steps")->text(), QStringLiteral("no limit"));
        QCOMPARE(field<QLineEdit>(editor, "trainer.lr")->text(), QString());
        QCOMPARE(field<QLineEdit>(editor, "trainer.lr")->placeholderText(), QStringLiteral("trainer default"));
        QCOMPARE(field<QComboBox>(editor, "trainer.optimizer")->lineEdit()->placeholderText(),
                 QStringLiteral("trainer default"));
    }

    void debugNodeOffersEveryNode() {
        JobEditor editor;
        open(editor);
        auto* node = field<QComboBox>(editor, "debug.node");
        const QStringList names{"local", "gpu-a", "gpu-b"};
        QCOMPARE(itemTexts(node), names);
        QCOMPARE(node->currentText(), QStringLiteral("local"));
        // A job with a problem offers the names as written (a node without one is known by its host).
        editor.setJsonText(exampleWith(QStringLiteral("2222"), QStringLiteral("0")));
        QVERIFY(!editor.isValid());
        QCOMPARE(itemTexts(node), names);
    }

    void processesPerNodeShowsAndSetsEveryNode() {
        JobEditor editor;
        open(editor);
        auto* procs = field<QSpinBox>(editor, "nodes[*].procs");
        QCOMPARE(procs->value(), 2);
        // Nodes that differ: "as each node says".
        editor.setJsonText(exampleWith(QStringLiteral("\"procs\": 2\n"), QStringLiteral("\"procs\": 1\n")));
        QCOMPARE(editor.job()->nodes[1].procs, 1);
        QCOMPARE(procs->value(), 0);
        // So does a job with a problem whose nodes differ as written (gpu-a says nothing, gpu-b says 2).
        editor.setJsonText(exampleWith(QStringLiteral("2222"), QStringLiteral("0")));
        QVERIFY(!editor.isValid());
        QCOMPARE(procs->value(), 0);

        open(editor);
        procs->setValue(1);
        QTRY_COMPARE(editor.job()->nodes[0].procs, 1);
        QJsonObject written = jsonObject(editor);
        QCOMPARE(written["nodes"][0][QLatin1String("procs")].toInt(), 1);
        QCOMPARE(written["nodes"][1][QLatin1String("procs")].toInt(), 1);
        QVERIFY(!written["node_defaults"].toObject().contains(QStringLiteral("procs"))); // not there before
        procs->setValue(0); // back to "as each node says": the nodes keep what they have
        QTest::qWait(JobEditor::kValidationDelayMs + 50);
        QCOMPARE(jsonObject(editor)[QLatin1String("nodes")][0][QLatin1String("procs")].toInt(), 1);

        // A job that sets procs in node_defaults has it set there as well.
        QJsonObject withDefaults = jsonObject(editor);
        QJsonObject defaults = withDefaults["node_defaults"].toObject();
        defaults.insert(QStringLiteral("procs"), 1);
        withDefaults.insert(QStringLiteral("node_defaults"), defaults);
        editor.setJsonText(QString::fromUtf8(QJsonDocument(withDefaults).toJson()));
        QCOMPARE(procs->value(), 1);
        procs->setValue(2);
        QTRY_COMPARE(jsonObject(editor)[QLatin1String("node_defaults")][QLatin1String("procs")].toInt(), 2);
    }

    void procsInNodeDefaultsIsMarkedAtTheProcsField() {
        JobEditor editor;
        editor.setJsonText(exampleWith(QStringLiteral("\"gpus\": 2\n"), QStringLiteral("\"gpus\": 2, \"procs\": 3\n")));
        auto* procs = field<QSpinBox>(editor, "nodes[*].procs");
        QVERIFY(procs->property("invalid").toBool());
        QVERIFY2(procs->toolTip().startsWith(QLatin1String("node_defaults.procs:")), qPrintable(procs->toolTip()));
        QVERIFY(!issueItem(editor, QStringLiteral("node_defaults.procs"))->toolTip().contains(QLatin1String("JSON")));
    }

    void eachProblemOfAFieldIsInItsTooltipAndFrame() {
        JobEditor editor;
        open(editor);
        auto* procs = field<QSpinBox>(editor, "nodes[*].procs");
        QVERIFY(procs->styleSheet().isEmpty());
        procs->setValue(3); // more than each node's 2 GPUs: both nodes
        QTRY_VERIFY(procs->property("invalid").toBool());
        QVERIFY2(procs->toolTip().contains(QLatin1String("nodes[0].procs")), qPrintable(procs->toolTip()));
        QVERIFY2(procs->toolTip().contains(QLatin1String("nodes[1].procs")), qPrintable(procs->toolTip()));
        QVERIFY(procs->styleSheet().contains(QLatin1String("border")));
        procs->setValue(2);
        QTRY_VERIFY(!procs->property("invalid").toBool());
        QVERIFY(procs->toolTip().isEmpty());
        QVERIFY(procs->styleSheet().isEmpty());
    }

    void environmentRowsAreAddedAndRemoved() {
        JobEditor editor;
        open(editor);
        auto* env = field<QTableWidget>(editor, "env");
        button(editor, "Add")->click();
        QCOMPARE(env->rowCount(), 3);
        QCOMPARE(env->currentRow(), 2);
        setCell(env, 2, 0, QStringLiteral("  NCCL_DEBUG "));
        setCell(env, 2, 1, QStringLiteral("INFO"));
        using Env = QList<QPair<QString, QString>>;
        QTRY_COMPARE(editor.job()->env,
                     (Env{{"NCCL_SOCKET_IFNAME", "eth0"}, {"OMP_NUM_THREADS", "4"}, {"NCCL_DEBUG", "INFO"}}));
        // The environment's comment stays, as every other comment of the file does.
        QVERIFY(editor.jsonText().contains(QLatin1String("Set for every rank, after RankScope's own variables.")));

        // A row without a name is not written.
        button(editor, "Add")->click();
        setCell(env, 3, 0, QStringLiteral("  "));
        setCell(env, 3, 1, QStringLiteral("orphan"));
        QTest::qWait(JobEditor::kValidationDelayMs + 50);
        QVERIFY(editor.isValid());
        QVERIFY(!editor.jsonText().contains(QLatin1String("orphan")));

        env->setCurrentCell(1, 0);
        button(editor, "Remove")->click();
        QTRY_COMPARE(editor.job()->env, (Env{{"NCCL_SOCKET_IFNAME", "eth0"}, {"NCCL_DEBUG", "INFO"}}));

        // The last variable removed: no "env" left.
        editor.setJsonText(QStringLiteral("{\"name\": \"m\", \"mode\": \"debug\", \"env\": {\"A\": \"1\"}}"));
        env->setCurrentCell(0, 0);
        button(editor, "Remove")->click();
        QTRY_VERIFY(!jsonObject(editor).contains(QStringLiteral("env")));
    }

    void environmentValueThatIsNoStringIsShownAndMarked() {
        JobEditor editor;
        editor.setJsonText(QStringLiteral("{\"name\": \"m\", \"mode\": \"debug\", \"env\": {\"A\": 4}}"));
        auto* env = field<QTableWidget>(editor, "env");
        QCOMPARE(env->item(0, 1)->text(), QStringLiteral("4"));
        QCOMPARE(env->item(0, 0)->background().color(), QColor(0xff, 0xeb, 0xee));
        QVERIFY(env->item(0, 0)->toolTip().contains(QLatin1String("must be a string")));
        env->item(0, 1)->setText(QStringLiteral("5")); // typed in the table: a string
        QTRY_VERIFY(editor.isValid());
        QVERIFY(!env->item(0, 0)->data(Qt::BackgroundRole).isValid());
        QVERIFY(env->item(0, 0)->toolTip().isEmpty());
    }

    void aNumberIsWrittenOnlyOnceComplete() {
        JobEditor editor;
        open(editor);
        auto* lr = field<QLineEdit>(editor, "trainer.lr");
        QCOMPARE(lr->text(), QStringLiteral("0.001"));
        lr->selectAll();
        QTest::keyClicks(lr, QStringLiteral("1e"));
        QTest::qWait(JobEditor::kValidationDelayMs + 50);
        QCOMPARE(jsonObject(editor)[QLatin1String("trainer")][QLatin1String("lr")].toDouble(),
                 0.001); // half typed: the file keeps its value
        QTest::keyClicks(lr, QStringLiteral("-2"));
        QTRY_COMPARE(editor.job()->trainer.lr, 0.01);
        QTest::keyClick(lr, Qt::Key_A, Qt::ControlModifier);
        QTest::keyClick(lr, Qt::Key_Delete); // empty: the trainer's default, the key goes
        QTRY_VERIFY(!jsonObject(editor)[QLatin1String("trainer")].toObject().contains(QStringLiteral("lr")));
    }

    void openingTellsTheAbsolutePath() {
        JobEditor editor;
        QSignalSpy path(&editor, &JobEditor::filePathChanged);
        const QString copy = m_dir.filePath(QStringLiteral("relative.json"));
        QVERIFY(QFile::copy(kExample, copy) || QFile::exists(copy));
        const QString before = QDir::currentPath();
        QDir::setCurrent(m_dir.path());
        QString error;
        const bool opened = editor.openFile(QStringLiteral("relative.json"), &error);
        QDir::setCurrent(before);
        QVERIFY2(opened, qPrintable(error));
        QCOMPARE(editor.filePath(), QFileInfo(copy).absoluteFilePath());
        QCOMPARE(path.size(), 1);
        QCOMPARE(path.front().front().toString(), editor.filePath());

        editor.openUntitled(QStringLiteral("{\"name\": \"new\", \"mode\": \"debug\"}"));
        QVERIFY(editor.filePath().isEmpty());
        QCOMPARE(path.size(), 2);
        QVERIFY(path.back().front().toString().isEmpty());
        QCOMPARE(editor.job()->name, QStringLiteral("new"));
    }

    void aRelativeHostfileIsReadBesideTheJob() {
        const QString dir = m_dir.filePath(QStringLiteral("hostjob"));
        QVERIFY(QDir().mkpath(dir));
        writeFile(dir + QStringLiteral("/hosts"), "worker-1 slots=2\nworker-2 slots=2\n");
        writeFile(dir + QStringLiteral("/job.json"),
                  "{\"name\": \"h\", \"mode\": \"submit\", \"hostfile\": \"hosts\"}");
        JobEditor editor;
        open(editor, dir + QStringLiteral("/job.json"));
        QCOMPARE(editor.job()->nodes.size(), 2);
        QCOMPARE(editor.job()->nodes[1].host, QStringLiteral("worker-2"));
    }

    void savedTextIsUtf8() {
        JobEditor editor;
        open(editor);
        auto* name = field<QLineEdit>(editor, "name");
        name->selectAll();
        for (const QChar c : QStringLiteral("na\u00efve-\u2713")) // typed: keyClicks knows only ASCII
            QTest::sendKeyEvent(QTest::Press, name, Qt::Key_unknown, QString(c), Qt::NoModifier);
        QTRY_COMPARE(editor.job()->name, QStringLiteral("na\u00efve-\u2713"));
        const QString path = m_dir.filePath(QStringLiteral("utf8.json"));
        QString error;
        QVERIFY2(editor.saveFile(path, &error), qPrintable(error));
        QVERIFY(readAll(path).contains(QStringLiteral("\"na\u00efve-\u2713\"").toUtf8()));
    }

    void aNewDocumentDropsPendingFormEdits() {
        JobEditor editor;
        open(editor);
        QTest::keyClicks(field<QLineEdit>(editor, "name"), QStringLiteral("-v2")); // written at the next tick
        const QString other = QStringLiteral("{\"name\": \"other\", \"mode\": \"debug\"}");
        editor.setJsonText(other);
        QTest::qWait(JobEditor::kValidationDelayMs + 50);
        QCOMPARE(editor.jsonText(), other);
        QCOMPARE(editor.job()->name, QStringLiteral("other"));
    }

    void statusSaysValidOrHowManyProblems() {
        JobEditor editor;
        open(editor);
        auto* status = editor.findChild<QLabel*>(QStringLiteral("status"));
        QCOMPARE(status->text(), QStringLiteral("\u2713 valid job"));
        editor.setJsonText(exampleWith(QStringLiteral("29500"), QStringLiteral("70000")));
        QCOMPARE(status->text(), QStringLiteral("\u2717 1 problem(s)"));
    }

    void validityIsToldOnlyWhenItChanges() {
        JobEditor editor;
        open(editor);
        QSignalSpy validity(&editor, &JobEditor::validityChanged);
        QSignalSpy changed(&editor, &JobEditor::jobChanged);
        editor.setJsonText(exampleWith(QStringLiteral("29500"), QStringLiteral("70000")));
        editor.setJsonText(exampleWith(QStringLiteral("29500"), QStringLiteral("70001")));
        QCOMPARE(changed.size(), 2);
        QCOMPARE(validity.size(), 1);
        QCOMPARE(validity.front().front().toBool(), false);
    }

    void problemsAreMarkedInTheJson() {
        JobEditor editor;
        editor.setJsonText(exampleWith(QStringLiteral("2222"), QStringLiteral("0")));
        auto* json = editor.findChild<QPlainTextEdit*>(QStringLiteral("json"));
        QCOMPARE(json->extraSelections().size(), editor.issues().size());
        QStringList marked;
        for (const QTextEdit::ExtraSelection& mark : json->extraSelections())
            marked << mark.cursor.block().text().trimmed();
        QVERIFY2(marked.contains(QStringLiteral("\"port\": 0,")), qPrintable(marked.join(QLatin1Char('|'))));
        open(editor);
        QVERIFY(json->extraSelections().isEmpty());
    }

    void anIssueClickScrollsItsFieldIntoView() {
        JobEditor editor;
        editor.setJsonText(exampleWith(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1BAD")));
        editor.resize(900, 260);
        editor.show();
        QVERIFY(QTest::qWaitForWindowExposed(&editor));
        auto* area = editor.findChild<QScrollArea*>();
        area->verticalScrollBar()->setValue(0);
        QVERIFY(area->verticalScrollBar()->maximum() > 0);
        auto* list = editor.findChild<QListWidget*>(QStringLiteral("issues"));
        emit list->itemClicked(issueItem(editor, QStringLiteral("env.1BAD")));
        QTRY_VERIFY(area->verticalScrollBar()->value() > 0);
    }

    void aFormEditKeepsTheJsonPlaceAndHistory() {
        JobEditor editor;
        open(editor);
        editor.resize(900, 300);
        editor.show();
        QVERIFY(QTest::qWaitForWindowExposed(&editor));
        auto* json = editor.findChild<QPlainTextEdit*>(QStringLiteral("json"));
        auto* name = field<QLineEdit>(editor, "name");
        QTextCursor cursor = json->textCursor();
        cursor.setPosition(10);
        json->setTextCursor(cursor);
        QScrollBar* scroll = json->verticalScrollBar();
        QVERIFY(scroll->maximum() > 0);
        scroll->setValue(scroll->maximum());
        QTest::keyClicks(name, QStringLiteral("x"));
        QTRY_VERIFY(editor.jsonText().contains(QLatin1String("2x2x")));
        QCOMPARE(json->textCursor().position(), 10);
        QCOMPARE(scroll->value(), scroll->maximum());

        // An edit that comes back to the same text leaves the JSON alone, its undo history too.
        const int undo = json->document()->availableUndoSteps();
        QTest::keyClicks(name, QStringLiteral("y"));
        QTest::keyClick(name, Qt::Key_Backspace);
        QTest::qWait(JobEditor::kValidationDelayMs + 50);
        QCOMPARE(json->document()->availableUndoSteps(), undo);
    }

    void recentJobsMenuOpensThem() {
        QSettings().remove(QStringLiteral("jobview/recentJobs"));
        JobEditor editor;
        QMenu* menu = recentMenu(editor);
        emit menu->aboutToShow();
        QCOMPARE(menu->actions().size(), 1);
        QVERIFY(!menu->actions().front()->isEnabled());

        const QString copy = m_dir.filePath(QStringLiteral("recent-menu.json"));
        QVERIFY(QFile::copy(kExample, copy) || QFile::exists(copy));
        open(editor, kExample);
        open(editor, copy);
        emit menu->aboutToShow();
        QCOMPARE(menu->actions().size(), 2);
        QCOMPARE(menu->actions()[1]->text(), QFileInfo(kExample).absoluteFilePath());
        menu->actions()[1]->trigger();
        QCOMPARE(editor.filePath(), QFileInfo(kExample).absoluteFilePath());
    }
};

QTEST_MAIN(tst_JobEditor)
#include "tst_jobeditor.moc"
