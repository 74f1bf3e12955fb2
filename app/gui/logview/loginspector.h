// SPDX-License-Identifier: MIT
#pragma once

#include "core/logclassify.h"
#include "core/runstore.h"
#include "core/streamlines.h"

#include <QSet>
#include <QWidget>

#include <functional>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QModelIndex;
class QPushButton;
class QTimer;
class QToolButton;
class QTreeView;

namespace rankscope::gui {

class LogCollapseModel;
class LogFilterProxy;
class LogModel;

// Every rank's log in one view: merged in time order with a host:rank column, filtered by rank set,
// severity, regular expression and NCCL-only, optionally with identical lines of many ranks collapsed.
// Follow mode keeps the newest line in view only while the user is at the bottom: scrolling up stops
// following, scrolling back to the bottom (or the Follow button) resumes it.
class LogInspector final : public QWidget {
    Q_OBJECT

public:
    explicit LogInspector(QWidget* parent = nullptr);
    ~LogInspector() override;

    [[nodiscard]] LogModel* model() const { return m_model; }
    [[nodiscard]] LogFilterProxy* filterProxy() const { return m_proxy; }
    [[nodiscard]] LogCollapseModel* collapseModel() const { return m_collapse; }
    [[nodiscard]] QTreeView* view() const { return m_view; }

    void focusRank(int rank);                   // only that rank's lines; -1: all ranks
    void setRankFilter(const QSet<int>& ranks); // empty: all ranks
    void setMinimumSeverity(LogSeverity severity);
    void setPattern(const QString& pattern); // applied at once (typing is applied after a short pause)
    void setNcclOnly(bool ncclOnly);
    void setCollapsed(bool collapsed);
    [[nodiscard]] bool isCollapsed() const;
    [[nodiscard]] bool isFollowing() const { return m_following; }
    void setFollowing(bool following);

    // Selects and scrolls to the earliest Error or Fatal line of any rank (by time), clearing the filters
    // that hide it. False when the model holds no error.
    bool showFirstError();
    // Where older lines come from once the window let them go: up to `count` lines of each stream before its
    // `before`, merged in the order they arrived (the main window reads the run store; see
    // RunLinePager::before). Unset: no paging.
    using OlderLinesSource =
        std::function<QVector<RankLogLine>(const QVector<RunLinePager::StreamStart>& streams, int count)>;
    void setOlderLinesSource(OlderLinesSource source);
    // Reads up to `perStream` older lines of every stream of the ranks shown into the top of the view, merged as
    // they arrived (a stream's lines older than another's oldest one read wait for the next call: see
    // RunLinePager::before), and stops following (the user is reading back). Returns how many lines came in.
    int loadOlderLines(int perStream = 2000);
    // Writes every line of `rank` the model holds, in order, one per line.
    bool exportRankLog(int rank, const QString& path, QString* error = nullptr) const;
    [[nodiscard]] QString statusText() const;
    // The Ranks button's menu, which it opens: "All ranks", then every rank the model holds a line of, each checked
    // while its lines are shown; choosing one sets the rank filter. The caller owns the menu.
    [[nodiscard]] QMenu* rankMenu(QWidget* parent);

private:
    void buildToolbar(QWidget* bar);
    void applyRankText(const QString& text);
    void showPatternError(const QString& error);
    void showRankMenu();
    void showContextMenu(const QPoint& position);
    void setViewModel();
    void scrollToEnd();
    void updateStatus();
    [[nodiscard]] QModelIndex viewIndexForModelRow(int row) const;
    [[nodiscard]] int modelRowOf(const QModelIndex& viewIndex) const;

    LogModel* m_model = nullptr;
    LogFilterProxy* m_proxy = nullptr;
    LogCollapseModel* m_collapse = nullptr;
    QTreeView* m_view = nullptr;
    QLineEdit* m_rankEdit = nullptr;
    QToolButton* m_rankMenuButton = nullptr;
    QComboBox* m_severityCombo = nullptr;
    QLineEdit* m_patternEdit = nullptr;
    QLabel* m_patternError = nullptr;
    QTimer* m_patternTimer = nullptr;
    QCheckBox* m_ncclCheck = nullptr;
    QCheckBox* m_collapseCheck = nullptr;
    QPushButton* m_firstErrorButton = nullptr;
    QToolButton* m_followButton = nullptr;
    QToolButton* m_olderButton = nullptr;
    OlderLinesSource m_olderSource;
    QLabel* m_status = nullptr;
    bool m_following = true;
};

} // namespace rankscope::gui
