// SPDX-License-Identifier: MIT
#pragma once

#include "core/jobspec.h"

#include <QSet>
#include <QStringList>
#include <QWidget>

#include <optional>

class QLabel;
class QListWidget;
class QListWidgetItem;
class QMenu;
class QPlainTextEdit;
class QScrollArea;
class QTimer;

namespace rankscope::gui {

class JobForm;

// A job file as a form and as its JSON text, side by side and kept in step: a form edit is written into the
// JSON (the file's own object, so its comments, node_defaults and hostfile stay), a JSON edit refreshes the
// form. Both are validated as the user types, by parseJob: every issue is shown at its field and listed under
// the form; clicking one goes to its field or its line of the JSON.
class JobEditor final : public QWidget {
    Q_OBJECT

public:
    static constexpr int kValidationDelayMs = 150;
    static constexpr int kMaxRecentJobs = 10;

    explicit JobEditor(QWidget* parent = nullptr);

    // Reads a job file into the editor as written; false with *error when it cannot be read. A file that
    // does not validate is still opened, with its issues shown.
    bool openFile(const QString& path, QString* error);
    // Writes the JSON text atomically (QSaveFile); the editor then edits that file.
    bool saveFile(const QString& path, QString* error);
    [[nodiscard]] QString filePath() const { return m_filePath; }

    // The job's nodes as the node table edited them, written into the text as the form's edits are: a node's
    // changed fields into its object as written (its comments, and what it leaves to node_defaults, stay), an
    // added node last, a removed one taken out. Nodes from a hostfile that change, go or get company are all
    // written out instead, and "hostfile" goes. False, and nothing written, while the text is no JSON object.
    bool setNodes(const QVector<NodeSpec>& nodes);
    // A job that has no file yet (a stored run's, to launch again or change): the editor edits `text` and
    // forgets the file it had, so that Save asks where instead of writing over that file.
    void openUntitled(const QString& text);
    void setJsonText(const QString& text);
    [[nodiscard]] QString jsonText() const;

    // The job, only while the text validates without a single issue.
    [[nodiscard]] std::optional<JobSpec> job() const;
    [[nodiscard]] QVector<JobIssue> issues() const { return m_issues; }
    [[nodiscard]] bool isValid() const { return m_job.has_value(); }

    // Most recent first, at most kMaxRecentJobs, kept in QSettings.
    [[nodiscard]] QStringList recentJobs() const;

signals:
    void jobChanged();              // the text changed and validated (job() has the new job)
    void validityChanged(bool valid);
    void filePathChanged(const QString& path);

private:
    QWidget* buildToolbar();
    void onFormEdited(const QString& path);
    void onJsonEdited();
    void onTimeout();
    void writeFormIntoJson();
    void validate();
    void refreshForm();
    void showIssues(const QVector<JobIssue>& unplaced);
    void goToIssue(QListWidgetItem* item);
    void moveJsonCursor(int offset);
    void replaceJsonText(const QString& text);
    void rememberRecent(const QString& path);
    void refreshRecentMenu();
    void chooseAndOpen();
    void save();
    void saveAs();
    [[nodiscard]] QString baseDir() const;

    JobForm* m_form = nullptr;
    QScrollArea* m_formArea = nullptr;
    QLabel* m_syntaxBanner = nullptr;
    QPlainTextEdit* m_json = nullptr;
    QListWidget* m_issueList = nullptr;
    QLabel* m_status = nullptr;
    QMenu* m_recentMenu = nullptr;
    QTimer* m_timer = nullptr;

    QString m_filePath;
    QSet<QString> m_formEdits; // paths edited in the form and not yet written into the JSON
    bool m_jsonEdited = false; // the JSON changed and the form has not caught up
    bool m_writingJson = false;
    std::optional<JobSpec> m_job;
    QVector<JobIssue> m_issues;
    bool m_valid = false;
};

} // namespace rankscope::gui
