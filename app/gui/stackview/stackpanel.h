// SPDX-License-Identifier: MIT
#pragma once

#include "stacktreemodel.h"

#include <QWidget>

class QLabel;
class QMenu;
class QPushButton;
class QTreeView;

namespace rankscope::gui {

// The Stacks dock: the merged stack tree of the latest capture (expandable; wait frames labelled and
// coloured; the ranks column marked where rank sets part), when it was captured, the ranks that gave no
// stacks and why, and a "Capture stacks" button. It asks the window for everything else: a capture
// (captureRequested) and a rank's log (rankRequested, on a click on a single rank's frame or from the
// context menu).
class StackPanel final : public QWidget {
    Q_OBJECT

public:
    explicit StackPanel(QWidget* parent = nullptr);

    // A capture, and the file it was saved to (empty when saving failed).
    void setTree(const StackTree& tree, const QString& path = QString());
    void addError(const QString& message); // the engine's stacksError
    void clear();
    void setCaptureEnabled(bool enabled);
    // The ranks a hang holds at fault: the frame where their main threads part from the others' is selected and
    // brought to the top of the view, so that the hung rank's branch is what one sees first, not the
    // waiting ranks' frames above it. Kept for the captures that follow; empty: none.
    void setFocusRanks(const QList<int>& ranks);
    // The rank a click on `index` asks for: the frame's rank when it has exactly one, else -1.
    [[nodiscard]] int rankForClick(const QModelIndex& index) const;
    // The context menu of the frame at `index`: "Show rank N's log" for each of its ranks.
    [[nodiscard]] QMenu* contextMenuFor(const QModelIndex& index, QWidget* parent);

    [[nodiscard]] StackTreeModel* model() const { return m_model; }
    [[nodiscard]] QTreeView* view() const { return m_view; }
    [[nodiscard]] QPushButton* captureButton() const { return m_capture; }
    [[nodiscard]] QLabel* summaryLabel() const { return m_summary; }
    [[nodiscard]] QLabel* errorsLabel() const { return m_errors; }

signals:
    void captureRequested();
    void rankRequested(int rank);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void expandMainPaths(const QModelIndex& parent);
    void showErrors();
    void showFocusRanks();
    [[nodiscard]] QModelIndex partingFrame(const QModelIndex& parent) const;

    StackTreeModel* m_model;
    QTreeView* m_view;
    QPushButton* m_capture;
    QLabel* m_summary;
    QLabel* m_errors;
    QStringList m_messages; // stacksError messages since the last capture
    QList<int> m_focusRanks; // sorted
};

} // namespace rankscope::gui
