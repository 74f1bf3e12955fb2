// SPDX-License-Identifier: MIT
#include "jobeditor.h"

#include "jobform.h"
#include "jsonpathindex.h"
#include "jsontextedit.h"

#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSaveFile>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QTextBlock>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

namespace rankscope::gui {

namespace {

const QString kRecentJobsKey = QStringLiteral("jobview/recentJobs");
constexpr int kPathRole = Qt::UserRole;
constexpr int kMessageRole = Qt::UserRole + 1;

// What a new editor starts with: two ranks on this machine, valid as it is.
JobSpec starterJob() {
    JobSpec job;
    job.name = QStringLiteral("untitled");
    job.mode = RunMode::Debug;
    return job;
}

} // namespace

JobEditor::JobEditor(QWidget* parent) : QWidget(parent) {
    m_form = new JobForm;
    m_formArea = new QScrollArea;
    m_formArea->setWidgetResizable(true);
    m_formArea->setFrameShape(QFrame::NoFrame);
    m_formArea->setWidget(m_form);

    m_syntaxBanner = new QLabel(tr("The JSON has a syntax error: fix it on the right to edit in the form again."));
    m_syntaxBanner->setObjectName(QStringLiteral("syntaxBanner"));
    m_syntaxBanner->setWordWrap(true);
    m_syntaxBanner->setStyleSheet(
        QStringLiteral("QLabel { background: #fdecea; color: #8a1c1c; padding: 6px; border-radius: 3px; }"));
    m_syntaxBanner->hide();

    m_issueList = new QListWidget;
    m_issueList->setObjectName(QStringLiteral("issues"));
    m_issueList->setAlternatingRowColors(true);
    connect(m_issueList, &QListWidget::itemClicked, this, &JobEditor::goToIssue);
    connect(m_issueList, &QListWidget::itemActivated, this, &JobEditor::goToIssue);

    auto* left = new QSplitter(Qt::Vertical);
    auto* formPane = new QWidget;
    auto* formLayout = new QVBoxLayout(formPane);
    formLayout->setContentsMargins(0, 0, 0, 0);
    formLayout->addWidget(m_syntaxBanner);
    formLayout->addWidget(m_formArea);
    left->addWidget(formPane);
    auto* issuePane = new QWidget;
    auto* issueLayout = new QVBoxLayout(issuePane);
    issueLayout->setContentsMargins(0, 4, 0, 0);
    issueLayout->addWidget(new QLabel(tr("<b>Problems</b> (click one to go to it)")));
    issueLayout->addWidget(m_issueList);
    left->addWidget(issuePane);
    left->setStretchFactor(0, 4);
    left->setStretchFactor(1, 1);

    m_json = new QPlainTextEdit;
    m_json->setObjectName(QStringLiteral("json"));
    m_json->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_json->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_json->setTabStopDistance(4 * m_json->fontMetrics().horizontalAdvance(QLatin1Char(' ')));
    connect(m_json, &QPlainTextEdit::textChanged, this, &JobEditor::onJsonEdited);

    auto* splitter = new QSplitter(Qt::Horizontal);
    splitter->setObjectName(QStringLiteral("jobSplitter"));
    splitter->addWidget(left);
    splitter->addWidget(m_json);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({640, 520});

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(buildToolbar());
    layout->addWidget(splitter, 1);

    m_timer = new QTimer(this);
    m_timer->setSingleShot(true);
    m_timer->setInterval(kValidationDelayMs);
    connect(m_timer, &QTimer::timeout, this, &JobEditor::onTimeout);
    connect(m_form, &JobForm::edited, this, &JobEditor::onFormEdited);

    setJsonText(QString::fromUtf8(QJsonDocument(jobToJson(starterJob())).toJson(QJsonDocument::Indented)));
}

QWidget* JobEditor::buildToolbar() {
    auto* bar = new QWidget;
    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);
    auto* open = new QPushButton(tr("Open…"));
    connect(open, &QPushButton::clicked, this, &JobEditor::chooseAndOpen);
    auto* recent = new QToolButton;
    recent->setText(tr("Recent"));
    recent->setPopupMode(QToolButton::InstantPopup);
    m_recentMenu = new QMenu(recent);
    connect(m_recentMenu, &QMenu::aboutToShow, this, &JobEditor::refreshRecentMenu);
    recent->setMenu(m_recentMenu);
    auto* saveButton = new QPushButton(tr("Save"));
    connect(saveButton, &QPushButton::clicked, this, &JobEditor::save);
    auto* saveAsButton = new QPushButton(tr("Save as…"));
    connect(saveAsButton, &QPushButton::clicked, this, &JobEditor::saveAs);
    m_status = new QLabel;
    m_status->setObjectName(QStringLiteral("status"));
    row->addWidget(open);
    row->addWidget(recent);
    row->addWidget(saveButton);
    row->addWidget(saveAsButton);
    row->addStretch();
    row->addWidget(m_status);
    return bar;
}

bool JobEditor::openFile(const QString& path, QString* error) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error)
            *error = tr("cannot read %1: %2").arg(path, file.errorString());
        return false;
    }
    m_filePath = QFileInfo(path).absoluteFilePath();
    setJsonText(QString::fromUtf8(file.readAll()));
    rememberRecent(m_filePath);
    emit filePathChanged(m_filePath);
    return true;
}

bool JobEditor::saveFile(const QString& path, QString* error) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        if (error)
            *error = tr("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    file.write(jsonText().toUtf8());
    if (!file.commit()) {
        if (error)
            *error = tr("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    m_filePath = QFileInfo(path).absoluteFilePath();
    rememberRecent(m_filePath);
    emit filePathChanged(m_filePath);
    return true;
}

namespace {

// Which node of `before` each of `after` was: the same index for an edit; for a removal, the next equal node;
// for nodes added (the table appends), -1 past the end. Empty when the two cannot be paired.
QVector<int> pairNodes(const QVector<NodeSpec>& before, const QVector<NodeSpec>& after) {
    QVector<int> pairs;
    if (after.size() >= before.size()) {
        for (int i = 0; i < after.size(); ++i)
            pairs << (i < before.size() ? i : -1);
        return pairs;
    }
    int from = 0;
    for (const NodeSpec& node : after) {
        while (from < before.size() && !(before[from] == node))
            ++from;
        if (from == before.size())
            return {};
        pairs << from++;
    }
    return pairs;
}

// The fields of `written` (a node as the file has it) changed from `before` to `after`, as nodeToJson writes them.
QJsonObject editedNode(QJsonObject written, const NodeSpec& before, const NodeSpec& after) {
    const QJsonObject from = nodeToJson(before);
    const QJsonObject to = nodeToJson(after);
    for (auto it = from.begin(); it != from.end(); ++it)
        if (!to.contains(it.key()))
            written.remove(it.key());
    for (auto it = to.begin(); it != to.end(); ++it)
        if (from.value(it.key()) != *it)
            written.insert(it.key(), *it);
    return written;
}

} // namespace

bool JobEditor::setNodes(const QVector<NodeSpec>& nodes) {
    if (m_timer->isActive()) { // the form's or the text's edits first, so that job() is the text's
        m_timer->stop();
        onTimeout();
    }
    const QString text = jsonText();
    const QJsonDocument document = QJsonDocument::fromJson(text.toUtf8());
    if (!document.isObject() && !text.trimmed().isEmpty())
        return false;
    QJsonObject object = document.object();
    const QJsonArray written = object.value(QStringLiteral("nodes")).toArray();
    const QVector<NodeSpec> before = m_job ? m_job->nodes : QVector<NodeSpec>();
    const QVector<int> pairs = m_job ? pairNodes(before, nodes) : QVector<int>();

    // With nodes from a hostfile (past the written ones), a node added or removed, or one of theirs changed
    // (below): the nodes cannot stay split between the two.
    const bool hostfileNodes = before.size() > written.size();
    bool whole = !m_job || (pairs.isEmpty() && !nodes.isEmpty()) || (hostfileNodes && nodes.size() != before.size());
    QJsonArray edited;
    for (int i = 0; i < nodes.size() && !whole; ++i) {
        const int was = pairs[i];
        if (was < 0)
            edited.append(nodeToJson(nodes[i]));
        else if (was < written.size())
            edited.append(editedNode(written[was].toObject(), before[was], nodes[i]));
        else if (!(before[was] == nodes[i]))
            whole = true;
    }
    if (whole) {
        edited = {};
        for (const NodeSpec& node : nodes)
            edited.append(nodeToJson(node));
        object.remove(QStringLiteral("hostfile"));
    }
    if (!edited.isEmpty() || object.contains(QStringLiteral("nodes")))
        object.insert(QStringLiteral("nodes"), edited);
    setJsonText(editJsonText(text, object));
    return true;
}

void JobEditor::openUntitled(const QString& text) {
    m_filePath.clear();
    setJsonText(text);
    emit filePathChanged(m_filePath);
}

void JobEditor::setJsonText(const QString& text) {
    replaceJsonText(text);
    m_formEdits.clear();
    m_jsonEdited = true;
    m_timer->stop();
    onTimeout(); // a whole new document: no reason to wait
}

QString JobEditor::jsonText() const {
    return m_json->toPlainText();
}

std::optional<JobSpec> JobEditor::job() const {
    return m_job;
}

void JobEditor::onFormEdited(const QString& path) {
    m_formEdits.insert(path);
    m_timer->start();
}

void JobEditor::onJsonEdited() {
    if (m_writingJson)
        return;
    m_jsonEdited = true;
    m_timer->start();
}

void JobEditor::onTimeout() {
    if (!m_formEdits.isEmpty())
        writeFormIntoJson();
    validate();
    if (m_jsonEdited) {
        m_jsonEdited = false;
        refreshForm();
    }
    showIssues(m_form->markIssues(m_issues)); // after the refresh, which makes the environment's rows anew
}

void JobEditor::writeFormIntoJson() {
    const QString text = jsonText();
    const QJsonDocument document = QJsonDocument::fromJson(text.toUtf8());
    QJsonObject object;
    if (document.isObject())
        object = document.object();
    else if (!text.trimmed().isEmpty())
        return; // the form is disabled while the text is not an object; nothing sensible to patch
    m_form->patch(object, m_formEdits);
    m_formEdits.clear();
    replaceJsonText(editJsonText(text, object)); // the user's file as written, changed where the form changed it
}

void JobEditor::validate() {
    const QString text = jsonText();
    const JobParseResult result = parseJob(text.toUtf8(), baseDir());
    m_issues = result.issues;
    m_job = result.ok() ? result.job : std::nullopt;

    const int count = static_cast<int>(m_issues.size());
    m_status->setText(m_job ? tr("✓ valid job") : tr("✗ %n problem(s)", nullptr, count));
    m_status->setStyleSheet(m_job ? QStringLiteral("QLabel { color: #1b7f3b; font-weight: bold; }")
                                  : QStringLiteral("QLabel { color: #c62828; font-weight: bold; }"));
    const bool valid = m_job.has_value();
    if (valid != m_valid) {
        m_valid = valid;
        emit validityChanged(valid);
    }
    emit jobChanged();
}

void JobEditor::refreshForm() {
    const QJsonDocument document = QJsonDocument::fromJson(jsonText().toUtf8());
    const bool editable = document.isObject();
    m_syntaxBanner->setVisible(!editable);
    m_form->setEnabled(editable);
    if (editable)
        m_form->fill(document.object(), m_job);
}

void JobEditor::showIssues(const QVector<JobIssue>& unplaced) {
    m_issueList->clear();
    const QString text = jsonText();
    QList<QTextEdit::ExtraSelection> marks;
    static const QRegularExpression lineColumn(QStringLiteral(" at (\\d+):(\\d+)"));
    for (const JobIssue& issue : std::as_const(m_issues)) {
        auto* item = new QListWidgetItem(issue.toString(), m_issueList);
        item->setData(kPathRole, issue.path);
        item->setData(kMessageRole, issue.message);
        item->setIcon(style()->standardIcon(QStyle::SP_MessageBoxWarning));
        if (unplaced.contains(issue))
            item->setToolTip(tr("Shown in the JSON: no field of the form holds it"));

        QTextEdit::ExtraSelection mark;
        mark.format.setBackground(QColor(0xfd, 0xec, 0xea));
        mark.format.setProperty(QTextFormat::FullWidthSelection, true);
        mark.cursor = QTextCursor(m_json->document());
        if (const QRegularExpressionMatch at = lineColumn.match(issue.message); issue.path.isEmpty() && at.hasMatch()) {
            const QTextBlock block = m_json->document()->findBlockByNumber(at.captured(1).toInt() - 1);
            mark.cursor.setPosition(block.isValid() ? block.position() : 0);
        } else if (!issue.path.isEmpty()) {
            mark.cursor.setPosition(qMin(jsonPathOffset(text, issue.path), m_json->document()->characterCount() - 1));
        } else {
            continue;
        }
        marks << mark;
    }
    m_json->setExtraSelections(marks);
}

void JobEditor::goToIssue(QListWidgetItem* item) {
    if (!item)
        return;
    const QString path = item->data(kPathRole).toString();
    const QString message = item->data(kMessageRole).toString();
    if (QWidget* field = m_form->fieldForPath(path); field && m_form->isEnabled()) {
        m_formArea->ensureWidgetVisible(field);
        field->setFocus(Qt::OtherFocusReason);
        return;
    }
    static const QRegularExpression lineColumn(QStringLiteral(" at (\\d+):(\\d+)"));
    if (const QRegularExpressionMatch at = lineColumn.match(message); path.isEmpty() && at.hasMatch()) {
        const QTextBlock block = m_json->document()->findBlockByNumber(at.captured(1).toInt() - 1);
        if (block.isValid())
            moveJsonCursor(block.position() + qMin(at.captured(2).toInt() - 1, block.length() - 1));
        return;
    }
    moveJsonCursor(jsonPathOffset(jsonText(), path));
}

void JobEditor::moveJsonCursor(int offset) {
    QTextCursor cursor = m_json->textCursor();
    cursor.setPosition(qBound(0, offset, m_json->document()->characterCount() - 1));
    m_json->setTextCursor(cursor);
    m_json->centerCursor();
    m_json->setFocus(Qt::OtherFocusReason);
}

// Keeps the user's place (cursor and scroll) and the undo history.
void JobEditor::replaceJsonText(const QString& text) {
    if (text == jsonText())
        return;
    const int position = m_json->textCursor().position();
    const int scroll = m_json->verticalScrollBar()->value();
    m_writingJson = true;
    QTextCursor all(m_json->document());
    all.select(QTextCursor::Document);
    all.insertText(text);
    m_writingJson = false;
    QTextCursor cursor = m_json->textCursor();
    cursor.setPosition(qMin(position, m_json->document()->characterCount() - 1));
    m_json->setTextCursor(cursor);
    m_json->verticalScrollBar()->setValue(scroll);
}

QStringList JobEditor::recentJobs() const {
    return QSettings().value(kRecentJobsKey).toStringList();
}

void JobEditor::rememberRecent(const QString& path) {
    QStringList recent = recentJobs();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecentJobs)
        recent.removeLast();
    QSettings().setValue(kRecentJobsKey, recent);
}

void JobEditor::refreshRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = recentJobs();
    if (recent.isEmpty())
        m_recentMenu->addAction(tr("No recent jobs"))->setEnabled(false);
    for (const QString& path : recent)
        m_recentMenu->addAction(path, this, [this, path] {
            QString error;
            if (!openFile(path, &error))
                QMessageBox::warning(this, tr("Open job"), error);
        });
}

void JobEditor::chooseAndOpen() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open job"), QFileInfo(m_filePath).absolutePath(),
                                                      tr("Job files (*.json);;All files (*)"));
    QString error;
    if (!path.isEmpty() && !openFile(path, &error))
        QMessageBox::warning(this, tr("Open job"), error);
}

void JobEditor::save() {
    if (m_filePath.isEmpty()) {
        saveAs();
        return;
    }
    QString error;
    if (!saveFile(m_filePath, &error))
        QMessageBox::warning(this, tr("Save job"), error);
}

void JobEditor::saveAs() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save job"), m_filePath,
                                                      tr("Job files (*.json);;All files (*)"));
    QString error;
    if (!path.isEmpty() && !saveFile(path, &error))
        QMessageBox::warning(this, tr("Save job"), error);
}

QString JobEditor::baseDir() const {
    return m_filePath.isEmpty() ? QString() : QFileInfo(m_filePath).absolutePath();
}

} // namespace rankscope::gui
