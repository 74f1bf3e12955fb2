// SPDX-License-Identifier: MIT
#pragma once

#include "ncclfactsmodel.h"

#include <QWidget>

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace rankscope::gui {

// The NCCL dock: NcclFactsModel in a table sorted by rank, with a line that says where the facts come from
// and what a marked cell means, or why the table is empty. A click on a row asks for that rank's log.
class NcclPanel final : public QWidget {
    Q_OBJECT

public:
    explicit NcclPanel(QWidget* parent = nullptr);

    void setFacts(const QVector<RankNcclFacts>& perRank);
    void clear();

    [[nodiscard]] NcclFactsModel* model() const { return m_model; }
    [[nodiscard]] QSortFilterProxyModel* proxy() const { return m_proxy; }
    [[nodiscard]] QTableView* view() const { return m_view; }
    [[nodiscard]] QLabel* noteLabel() const { return m_note; }

signals:
    void rankRequested(int rank);

private:
    void updateNote();

    NcclFactsModel* m_model;
    QSortFilterProxyModel* m_proxy;
    QTableView* m_view;
    QLabel* m_note;
};

} // namespace rankscope::gui
