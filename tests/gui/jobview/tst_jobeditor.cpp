// SPDX-License-Identifier: MIT
// The job editor as a user drives it: typing in the form and in the JSON, opening and saving files.
#include "jobeditor.h"

#include "core/jobspec.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBlock>
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
        // The file's own object was edited: its comments and node_defaults stay.
        QVERIFY(editor.jsonText().contains(QLatin1String("\"//mode\"")));
        QVERIFY(editor.jsonText().contains(QLatin1String("\"node_defaults\"")));

        auto* optimizer = editor.findChild<QComboBox*>(QStringLiteral("trainer.optimizer"));
        optimizer->setCurrentText(QStringLiteral("sgd"));
        QTRY_COMPARE(editor.job()->trainer.optimizer, QStringLiteral("sgd"));
        optimizer->setCurrentText(QString()); // empty: back to the trainer's default, the key goes
        QTRY_VERIFY(editor.job()->trainer.optimizer.isEmpty());
        QVERIFY(!editor.jsonText().contains(QLatin1String("\"optimizer\"")));

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
        editor.setJsonText(QStringLiteral("{\"name\": \"fixed\", \"mode\": \"debug\"}"));
        QVERIFY(editor.isValid());
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
};

QTEST_MAIN(tst_JobEditor)
#include "tst_jobeditor.moc"
